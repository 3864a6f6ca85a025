"""A script for the monkey test: asks a line, then loops forever over ops that make NaN
and -inf now and then, printing markup-looking text, under a scope with brackets."""
import time

import execmode as em

name = input("[/p] name? [bold]")
x = em.ones(4, 3)
for step in range(1_000_000):
    with em.named_scope("loop[1]"):
        y = em.log(x - float(step % 3))      # -inf at 1, NaN at 2
    print(f"[/x] step {step} [bold]{name}[/")
    time.sleep(0.02)
