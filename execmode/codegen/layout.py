"""Index arithmetic for kernels: broadcast strides, the reduction loop order, loop merging.

Every array a kernel touches is described by one element stride per dimension of the
iteration space (0 where it is broadcast or reduced away). The loop nest is then a
permutation of those dimensions (for reductions: outer x reduce x inner) in which adjacent
dimensions merge when every array walks them as one (``stride[a] == stride[b] * size[b]``),
and dimensions of size 1 disappear. A contiguous elementwise kernel of any rank becomes one
flat loop; ``x + bias`` over (64, 256) stays two loops, because ``bias`` restarts each row.
"""

from __future__ import annotations

from dataclasses import dataclass


def contiguous_strides(shape) -> tuple:
    """Element strides of a C-contiguous array."""
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def broadcast_strides(shape, space, own=None) -> tuple:
    """Strides of an array of ``shape`` (C-contiguous, or with element strides ``own``)
    broadcast to the iteration ``space`` (NumPy's rules: right-aligned, size-1 and missing
    dimensions repeat)."""
    own = contiguous_strides(shape) if own is None else own
    lead = len(space) - len(shape)
    if lead < 0:
        raise ValueError(f"shape {shape} does not broadcast to {space}")
    out = []
    for d, size in enumerate(space):
        k = d - lead
        if k < 0 or shape[k] == 1:
            out.append(0)
        elif shape[k] == size:
            out.append(own[k])
        else:
            raise ValueError(f"shape {shape} does not broadcast to {space}")
    return tuple(out)


def reduced_strides(space, axes) -> tuple:
    """Strides of the (C-contiguous) output of reducing ``space`` over ``axes``, per
    dimension of ``space``; reduced dimensions get 0. keepdims changes nothing here: the
    kept size-1 axes have no extent."""
    kept = [d for d in range(len(space)) if d not in axes]
    own = contiguous_strides([space[d] for d in kept])
    out = [0] * len(space)
    for d, stride in zip(kept, own):
        out[d] = stride
    return tuple(out)


def reduction_roles(space, axes) -> list:
    """Role of each dimension: reduced axes "reduce"; kept axes after the last reduced axis
    "inner" (they are contiguous in memory, so the innermost vector loop walks them);
    the other kept axes "outer"."""
    last = max(axes) if axes else -1
    roles = []
    for d in range(len(space)):
        if d in axes:
            roles.append("reduce")
        elif d > last and axes:
            roles.append("inner")
        else:
            roles.append("outer")
    return roles


@dataclass
class LoopPlan:
    """The merged loop nest: sizes and roles per loop, and the map from a stride vector
    over the iteration space to strides per loop."""

    sizes: list
    roles: list
    groups: list          # per loop: the iteration-space dims merged into it, outer first

    def strides(self, space_strides) -> tuple:
        # A merged loop advances like the innermost dimension of its group.
        return tuple(space_strides[group[-1]] for group in self.groups)


ROLE_ORDER = {"outer": 0, "reduce": 1, "inner": 2}


def plan_loops(space, roles, vectors) -> LoopPlan:
    """Order the dimensions by role (stable), drop size-1 dimensions and merge neighbours
    of the same role that every stride vector in ``vectors`` walks contiguously."""
    order = sorted(range(len(space)), key=lambda d: ROLE_ORDER[roles[d]])
    groups: list[list[int]] = []
    for d in order:
        if space[d] == 1:
            continue
        if groups:
            prev = groups[-1]
            last = prev[-1]
            same_role = roles[last] == roles[d]
            if same_role and all(v[last] == v[d] * space[d] for v in vectors):
                prev.append(d)
                continue
        groups.append([d])
    sizes = []
    for group in groups:
        size = 1
        for d in group:
            size *= space[d]
        sizes.append(size)
    return LoopPlan(sizes, [roles[g[0]] for g in groups], groups)


def permuted_strides(strides, axes) -> tuple:
    """Element strides of ``permute_dims(x, axes)`` for x with ``strides`` (a view)."""
    return tuple(strides[a] for a in axes)


def is_contiguous(shape, strides) -> bool:
    return all(s == c for s, c, d in zip(strides, contiguous_strides(shape), shape) if d > 1)
