"""Reads stdin twice (input() with a prompt, then lines to the end), with an op between."""
import sys

import execmode as em

name = input("name? ")
x = em.ones(2) * 2.0
print("hello", name, float(x.sum().item()))
for line in sys.stdin:
    print("got", line.strip())
print("end")
