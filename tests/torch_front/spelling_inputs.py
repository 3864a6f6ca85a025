"""The probe's inputs and its list of cases (spellings_probe.py): small arrays drawn once, the
helpers that turn them into a module's tensors, and ``case``/``cases``, which add to ``CASES``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

RNG = np.random.default_rng(20)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((2, 3, 4)).astype(np.float32)
C = RNG.standard_normal((4, 5)).astype(np.float32)
V = RNG.standard_normal(6).astype(np.float32)
P = (np.abs(A) + 0.1).astype(np.float32)
IMG = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
SEQ = RNG.standard_normal((2, 5, 4)).astype(np.float32)
LABELS = np.array([0, 3, 1], dtype=np.int64)
IDX = np.array([2, 0, 1, 2], dtype=np.int64)
MASK = A > 0

CASES: list[tuple[str, Callable]] = []


def case(name: str):
    def add(fn):
        CASES.append((name, fn))
        return fn
    return add


def cases(pairs):
    for name, fn in pairs:
        CASES.append((name, fn))


def a(t):
    return t.tensor(A)


def b(t):
    return t.tensor(B)


def c(t):
    return t.tensor(C)


def v(t):
    return t.tensor(V)


def pos(t):
    return t.tensor(P)


def img(t):
    return t.tensor(IMG)


def seq(t):
    return t.tensor(SEQ)


def labels(t):
    return t.tensor(LABELS)


def shape_of(x):
    """Random draws: compare what does not depend on the generator."""
    return ("shape", tuple(x.shape), str(x.dtype).replace("torch.", ""))
