"""Runs eager ops until it is killed; says "ready" once 200 ops have run."""

import execmode as em

x = em.ones(64, 64)
n = 0
while True:
    x = em.tanh(x @ x) * 0.5
    n += 2
    if n == 200:
        print("ready", flush=True)
