"""Prints, then raises at once: its lines come before the traceback in the Output view."""
import execmode as em

for i in range(40):
    print("line", i)
x = em.ones(2) * 2.0
raise RuntimeError("after the prints")
