"""Counts computed from the batch size: ``x.shape[0] // 2 + 1`` as a shape, a repeat, an
int argument, an offset or a float (issue 35's symbolic sizes).

Under em.jit a dynamic size is traced as a symbol once two traces at different sizes give
one graph; a number computed from it that is the same at those two sizes (``t // 3`` at 6
and 7) and then escapes the symbol gives one graph that is wrong at a third size, silently.
Each form here keeps such a number in one API (tests/graph/test_fuzz_found_sizes.py names
the ones found). The statement comes after the body from a random stream of its own and is
returned besides the body's returns, so that every other program of a seed stays the
program it was. A Python loop over ``range()`` of such a number is a known escape
(docs/graph-mode.md) and is not generated.
"""

from __future__ import annotations

import random

FLOATS = ("float32", "float64")


def _forms(a, t: str, c: str) -> list:
    """(text, shape, dtype) of each form that fits ``a``; ``c`` is the count's text."""
    rest = a.shape[1:]
    ones = f"(1,) * ({a.name}.ndim - 1)"
    forms = [
        (f"em.sum(em.broadcast_to({a.name}[:1], ({c},) + tuple({a.name}.shape[1:])), axis=0)",
         rest, a.dtype),
        (f"em.sum(em.tile({a.name}[:1], ({c},) + {ones}), axis=0)", rest, a.dtype),
        (f"em.sum(em.repeat({a.name}[:1], {c}, axis=0), axis=0)", rest, a.dtype),
        (f"em.mean(em.nn.functional.pad({a.name}, (0, 0) * ({a.name}.ndim - 1) + (0, {c})), "
         f"axis=0)", rest, a.dtype),
        (f"em.sum({a.name}[{c}:], axis=0)", rest, a.dtype),
        (f"{a.name} * em.sum(em.linspace(0.0, 1.0, {c}, dtype={a.name}.dtype))",
         a.shape, a.dtype),
        (f"{a.name} * float({t} // 2)", a.shape, a.dtype),
        (f"{a.name} * em.sum(em.eye(3, k={c} - 2, dtype={a.name}.dtype))", a.shape, a.dtype),
        (f"em.sum(em.topk(em.reshape({a.name}, (-1,)), {c})[0])", (), a.dtype),
        (f"em.sum({a.name}.new_zeros(({c},)) + 1.0)", (), a.dtype),
    ]
    if len(a.shape) == 2:
        forms.append((f"em.sum(em.linalg.diagonal({a.name}, offset={c} - 2))", (), a.dtype))
    return forms


def statement(g):
    """A count statement at the end of ``g``'s body, or None (a program without symbolic
    sizes, the feature off, or nothing batch-sized to count from)."""
    if g.sizes is None or not g.on("size_counts"):
        return None
    r = random.Random(f"{g.seed}/size_counts")
    if r.random() >= 0.5:
        return None
    cands = [v for v in g.vars if g.readable(v) and v.dtype in FLOATS and v.shape
             and v.shape[0] == "B"]
    if not cands:
        return None
    a = r.choice(cands)
    t = f"{a.name}.shape[0]"
    c = f"({t} // {r.choice((2, 3))} + {r.choice((0, 1))})"
    text, shape, dtype = r.choice(_forms(a, t, c))
    return g.add_var(text, shape, dtype, {"size_counts"}, a)
