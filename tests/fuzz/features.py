"""The generator's feature toggles: one place that says what random programs may contain.

Every construct the generator can emit belongs to one feature. A feature that is on may
appear in any program; a feature that is off never does. Every feature and every check is
on: the classes of mismatch the fuzzer found (issue 13's ten, numbered below, and the new
ones) are fixed, each with a regression test in tests/graph/test_state_semantics.py or
tests/graph/test_edge_values.py. A feature that must be switched off again needs a comment
naming its mismatch class and an open issue.

``python -m tests.fuzz --only FEATURE`` (see ``__main__.py``) runs a base plus one feature;
``--off FEATURE`` leaves one out, to tell which feature a mismatch needs.
"""

from __future__ import annotations

FEATURES: dict[str, bool] = {
    # --- ops -----------------------------------------------------------------------------
    "elementwise": True,        # unary/binary ops, broadcasting, em.stack
    "scalars": True,            # Python number operands (x * 2.0, 1.5 - x)
    "reductions": True,         # sum/mean/max/min/argmax over an axis or all
    "matmul": True,             # a @ g1, a.T @ a, a @ w
    "where": True,              # em.where(a > b, a, b), comparisons
    "casts": True,              # astype between float32/float64/int64
    "array_api": True,          # cumulative_sum, flip, roll, diff along an axis (issue 36)
    "index_tensors": True,      # a[em.tensor([0, 2])]: gathers with in-range index tensors
    "more_dtypes": True,        # int8 ... uint64, complex64/128 through casts (issue 36)
    "more_functions": True,     # take, searchsorted, unique_values, em.linalg (issue 36)
    "size_counts": True,        # counts from the batch size in shapes and int args (issue 35)
    # fixed (class 2), was: simplify rewrites x + 0, x * 1, x / 1.0, -(-x), x.clone() to x, so the
    # output *is* (shares memory with) the input where eager returns a new tensor.
    "identity_ops": True,
    # --- views and in-place updates ------------------------------------------------------
    "views": True,              # read basic slices, reshape, .T, transpose, detach, x[0]
    "inplace_args": True,       # +=, -=, *=, x[i] = v, zero_(), em.assign, x[...] = v on args
    "inplace_globals": True,    # the same on captured globals and a captured object's tensor
    "masks": True,              # x[x > 0] = v (masked writes)
    # fixed (class 3), was: an intermediate updated in place and returned comes back frozen at its
    # trace-time value (the same object at every call).
    "inplace_intermediates": True,
    # fixed (class 4), was: writes through a view or detach() of an argument or capture are lost.
    "view_writes": True,
    # fixed (class 5), was: a view taken before an in-place update of its base reads stale values.
    "stale_views": True,
    # fixed (class 6 family), was: writing a value that requires grad into a tensor (x[...] = v,
    # x += v) makes it require grad eagerly; under jit it does not.
    "write_requires_grad": True,
    # --- outputs -------------------------------------------------------------------------
    "return_args": True,        # return an argument
    "return_captures": True,    # return a captured global / object tensor
    # fixed (class 6), was: returning a parameter that the function updated in place (opt.step())
    # clears requires_grad of the caller's parameter under jit.
    "return_params": True,
    # fixed (class 1), was: `return y, y` gives two distinct objects under jit (eager: one), and
    # two returned values that CSE merges into one node share a buffer or read garbage.
    "return_duplicates": True,
    # fixed (new class), was: a returned view or detach() of an argument or a capture: under jit it
    # does not share memory with its base, or is one frozen object returned at every call.
    "return_views": True,
    # fixed (new class), was: a returned w.grad is a copy under jit, not the tensor's .grad object.
    "return_grads": True,
    # fixed new class (documented in docs/graph-mode.md as "outputs carry no tape", against
    # issue 13's "requires_grad matches eager"): a returned value computed from tensors
    # that require grad has requires_grad=False under jit.
    "return_requires_grad": True,
    # --- state between calls -------------------------------------------------------------
    "mutate_between_calls": True,   # g0 += 1 at module level between calls
    "batch_sizes": True,        # batch sizes 0/1/5 across calls (retraces); else always 3
    # half the programs call f at 4-6 distinct batch sizes >= 2 (needs batch_sizes): em.jit's
    # symbolic sizes, one graph serving every further size (jit_driver/symbolic_dims.py)
    "symbolic_sizes": True,
    # fixed (class 7), was: a global rebound between calls (g0 = em.tensor(...)) is not seen: the
    # graph keeps reading the old object.
    "global_rebind": True,
    # fixed (class 8), was: obj.lr / obj.step / obj.flag / opt.lr read in f are frozen at their
    # trace-time values.
    "object_scalars": True,
    # fixed (new class), was: a captured tensor passed as an argument (f(g0) where f reads g0) is
    # merged with the capture at trace time; later calls with another argument read the
    # argument where f reads the capture.
    "alias_args": True,
    # --- autograd and optimizers ---------------------------------------------------------
    "backward": True,           # loss.backward() inside f, .grad reads
    "grad_edits": True,         # w.grad = None, w.grad = w.grad * 0.5, in-place .grad edits
    "arg_requires_grad": True,  # an argument with requires_grad=True
    "optimizers": True,         # opt.step() / opt.zero_grad() with SGD (momentum) or Adam
    "param_updates": True,      # with em.no_grad(): w -= 0.5 * w.grad
    # backward() after a call, outside f, through its results (jit_driver/backward.py: a
    # compiled backward graph), sometimes an opt.step() after it
    "outer_backward": True,
    # --- values --------------------------------------------------------------------------
    "special_floats": True,     # NaN, +-Inf, -0.0 in the inputs and as scalar operands
    "int_extremes": True,       # int64 min/max, 2**31 in integer inputs
    "inexact_values": True,     # float inputs that are not small dyadic rationals
    "near_limits": True,        # float inputs near the dtype's largest (sums that overflow)
    # fixed (class 9), was: max/min/argmax of an empty tensor: jit raises "argmax of an empty
    # tensor" for x.argmax(axis=1) of a (0, 4) tensor, which eager returns (shape (0,)).
    "zero_size_reductions": True,
    # fixed (class 9), was: out-of-range index tensors: jit raises RuleError where eager raises
    # ShapeError, or nothing at all when dead-code elimination dropped the failing gather.
    "bad_indices": True,
    # --- how f runs ----------------------------------------------------------------------
    "passes_subsets": True,     # em.jit(f, passes=<random subset of ALL>)
    "backends": True,           # backend="interpreter" / "numpy" besides the C kernels
    "listener": True,           # an instrument listener attached (changes the plan's path)
    # fixed (class 10), was: two threads tracing at once share the tracer: wrong results, missing
    # grads, AttributeError 'numpy.ndarray' object has no attribute 'node_id' in eager code.
    "threads": True,
}

# What the comparator checks (compare.py). All on.
CHECKS: dict[str, bool] = {
    "exceptions": True,          # eager raises <=> jit raises, the same type
    "values": True,              # outputs' and state's values, shapes and dtypes
    # fixed (class 9), was: -0.0 against 0.0 (equal values, other sign bit): folding computes
    # -(mean of zeros) as 0.0 where eager gives -0.0, for one.
    "signed_zero": True,
    "requires_grad": True,       # of outputs and of state tensors
    "grads": True,               # .grad of every state tensor: None-ness and values
    "identity": True,            # an output is an argument / global / another output
    "aliasing": True,            # distinct objects sharing memory, outputs and state
    # fixed (class 1), was: two distinct outputs of one call share memory under jit when CSE (or
    # folding) merges them into one node: `a = x * 2.0; b = x * 2.0; return a, b`. The
    # generator cannot keep equal values out of programs, so the check is switched instead.
    "output_aliasing": True,
    # A documented limitation, off: backward() inside a jitted call that reaches a history
    # an EARLIER jitted call left on a capture (g0[...] = loss makes g0 a jit result; the
    # next call's backward flows into it). Eager walks the earlier call's tape; a jit
    # result's backward is a compiled graph, which cannot be traced into the later call's
    # graph, so jit raises a BackwardError saying so (docs/graph-mode.md, "Backward
    # through a jitted function's results"). A clear error, not a wrong number. Found by
    # the slow tier (program 1795535866-5875). (A backward outside jit through such a
    # result works: feature outer_backward.)
    "jit_result_backward": False,
    # A float sum (mean) of int64 values holding -2**63 and 2**63 - 1: in float64 the two
    # cancel and absorb the small values beside them, by an amount that depends on the
    # order (NumPy pairwise, a kernel's running sum: -0.25 against 0.0, slow tier, program
    # 20261129-3108). Off: float values of programs with such literals and a mean are
    # not compared (eager against jit only).
    "int_extremes_sum_order": False,
}


def features(**overrides) -> dict[str, bool]:
    """The defaults with some toggles changed: ``features(threads=True)``."""
    unknown = set(overrides) - set(FEATURES)
    if unknown:
        raise KeyError(f"unknown fuzz features: {sorted(unknown)}")
    out = dict(FEATURES)
    out.update(overrides)
    return out


def all_on() -> dict[str, bool]:
    return {name: True for name in FEATURES}


def only(*names: str, base: dict | None = None) -> dict[str, bool]:
    """``base`` (the defaults) with the named features turned on as well."""
    return features(**{n: True for n in names}) if base is None else {**base, **{n: True for n in names}}
