"""einsum, lowered to the primitives a matmul graph already has.

No new primitive: each operand first sums the indices nobody else needs, then operands are
folded pairwise, each pair as one batched matmul (permute to (batch, free, contracted),
reshape to 3-D, matmul, reshape back), and the result is permuted to the output's order.
So einsum is eager, traced, differentiated and fused exactly as the matmul and reductions
it becomes.

Supported: explicit (``"ij,jk->ik"``) and implicit (``"ij,jk"``) outputs, ``...`` for
leading broadcast dimensions, size-1 broadcasting, any number of operands. A repeated
index inside one operand (a diagonal, ``"ii->i"``) is refused with a message.
"""

from __future__ import annotations

import math
import string

from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from . import reductions  # reductions.sum: this module's bodies use Python's max and any
from .arguments import _tensor_arg
from .linalg import matmul
from .shape import broadcast_to, permute_dims, reshape

_LETTERS = string.ascii_letters


def einsum(subscripts, *operands):
    """Einstein summation: ``em.einsum("bij,bjk->bik", a, b)``."""
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])  # PyTorch also takes einsum(eq, [a, b])
    if not isinstance(subscripts, str):
        raise op_error(ArgumentError, "einsum", operands,
                       f"the first argument must be the subscripts string, got "
                       f"{type(subscripts).__name__}")
    if not operands:
        raise op_error(ArgumentError, "einsum", (), "needs at least one operand")
    operands = [_tensor_arg("einsum", x, operands) for x in operands]
    terms, output = _parse(subscripts.replace(" ", ""), operands)
    sizes = _sizes(terms, operands, subscripts)
    return _evaluate(list(zip(operands, terms)), output, sizes)


def _fail(operands, problem, cls=ArgumentError):
    return op_error(cls, "einsum", tuple(operands), problem)


def _parse(text, operands):
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise _fail(operands, f"{text!r} names {len(terms)} operands, but {len(operands)} "
                              "were given")
    used = set(text) - set(".,->")
    bad = sorted(c for c in used if c not in _LETTERS)
    if bad:
        raise _fail(operands, f"subscripts must be letters, got {bad[0]!r} in {text!r}")
    spare = [c for c in _LETTERS if c not in used]
    # Ellipsis dimensions get fresh letters, aligned on the right (they broadcast).
    n_ell = 0
    for term, x in zip(terms, operands):
        if "..." in term:
            n_ell = max(n_ell, x.ndim - (len(term) - 3))
    ell = "".join(spare[:n_ell])
    expanded = []
    for term, x in zip(terms, operands):
        if "..." in term:
            k = x.ndim - (len(term) - 3)
            if k < 0:
                raise _fail(operands, f"term {term!r} has more indices than its operand "
                                      f"of rank {x.ndim}", ShapeError)
            term = term.replace("...", ell[n_ell - k:] if k else "")
        if "." in term:
            raise _fail(operands, f"a lone '.' in {text!r} (write '...')")
        if len(term) != x.ndim:
            raise _fail(operands, f"term {term!r} has {len(term)} indices but its operand "
                                  f"has rank {x.ndim} (shape {tuple(x.shape)})", ShapeError)
        repeated = sorted({c for c in term if term.count(c) > 1})
        if repeated:
            raise _fail(operands, f"index {repeated[0]!r} repeats within one operand (a "
                                  "diagonal): not supported; take the diagonal with indexing "
                                  "first")
        expanded.append(term)
    if arrow:
        # Without '...' in the output, the ellipsis dimensions are summed, as NumPy does.
        rhs = rhs.replace("...", ell)
        if len(set(rhs)) != len(rhs):
            raise _fail(operands, f"the output {rhs!r} repeats an index")
        missing = [c for c in rhs if not any(c in t for t in expanded)]
        if missing:
            raise _fail(operands, f"output index {missing[0]!r} appears in no operand")
        output = rhs
    else:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return expanded, output


def _sizes(terms, operands, text):
    sizes = {}
    for term, x in zip(terms, operands):
        for c, n in zip(term, x.shape):
            known = sizes.get(c, 1)
            if n != 1 and known != 1 and n != known:
                raise _fail(operands, f"index {c!r} has size {known} in one operand and "
                                      f"{n} in another ({text!r})", ShapeError)
            sizes[c] = n if known == 1 else known
    return sizes


def _sum_out(x, term, keep):
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return reductions.sum(x, axis=axes), "".join(c for c in term if c in keep)


def _arrange(x, term, order, sizes):
    """``x`` permuted to the letters of ``order`` and broadcast to their full sizes."""
    x = permute_dims(x, tuple(term.index(c) for c in order))
    full = tuple(sizes[c] for c in order)
    return broadcast_to(x, full)  # (x itself where it has them: a decision on the sizes)


def _evaluate(pairs, output, sizes):
    def needed_after(k):
        rest = set(output)
        for _, t in pairs[k + 1:]:
            rest |= set(t)
        return rest

    x, term = pairs[0]
    for k in range(1, len(pairs)):
        y, yterm = pairs[k]
        keep = needed_after(k)
        x, term = _sum_out(x, term, keep | set(yterm))
        y, yterm = _sum_out(y, yterm, keep | set(term))
        batch = [c for c in term if c in yterm and c in keep]
        contract = [c for c in term if c in yterm and c not in keep]
        a_free = [c for c in term if c not in yterm]
        b_free = [c for c in yterm if c not in term]
        a = _arrange(x, term, batch + a_free + contract, sizes)
        b = _arrange(y, yterm, batch + contract + b_free, sizes)

        def size(letters):
            return math.prod(sizes[c] for c in letters)

        a = reshape(a, (size(batch), size(a_free), size(contract)))
        b = reshape(b, (size(batch), size(contract), size(b_free)))
        term = "".join(batch + a_free + b_free)
        x = reshape(matmul(a, b), tuple(sizes[c] for c in term))
    x, term = _sum_out(x, term, set(output))
    if term != output:
        x = _arrange(x, term, list(output), sizes)
    return x


__all__ = ["einsum"]
