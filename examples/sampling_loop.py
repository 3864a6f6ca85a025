"""A sampling loop grows its context by one token per step: a new shape at every call.
Under em.jit the length becomes a dynamic dimension after its second size and is traced as
a symbolic size: once two traces at different lengths give the same graph, that graph
serves every later length (3 traces for 31 lengths, no eager call; docs/graph-mode.md,
"Shapes that change"). Where a graph depends on the size itself, cache_size_limit=8 bounds
the traces and the rest runs eagerly with one JitWarning naming the dimension (torch's
cache_size_limit behaves the same way).

    python examples/sampling_loop.py

benchmarks/bench_example_first_calls.py imports ``next_token_logits`` and ``sample``.
"""

import warnings

from _common import single_calls, size
from execmode.profilers.measure import context_line, decide

import execmode as em
import execmode.nn.functional as F

em.random.seed(0)
V, C, T = 65, 64, size(32, 12)
emb, pos = em.randn(V, C) * 0.1, em.randn(T, C) * 0.1
wq, wk, wv, wo = (em.randn(C, C) * 0.1 for _ in range(4))
w1, w2, head = em.randn(C, 4 * C) * 0.1, em.randn(4 * C, C) * 0.1, em.randn(C, V) * 0.1


def next_token_logits(idx):
    t = idx.shape[1]
    x = emb[idx] + pos[:t]
    att = (x @ wq) @ (x @ wk).transpose(-2, -1) * C ** -0.5
    att = att.masked_fill(~em.tril(em.ones(t, t, dtype=em.bool)), float("-inf"))
    x = x + (F.softmax(att, dim=-1) @ (x @ wv)) @ wo
    x = x + F.gelu(F.layer_norm(x, C) @ w1) @ w2
    return F.layer_norm(x, C)[:, -1] @ head


def sample(fn):
    idx = em.zeros(1, 1, dtype=em.int64)
    for _ in range(T - 1):
        idx = em.cat([idx, em.argmax(fn(idx), dim=-1)[:, None]], dim=1)
    return idx


def compile_per_size():
    return em.jit(next_token_logits, dynamic=False, cache_size_limit=None)


def new_loop(make_jit):
    """What one round times: a loop with a new jitted function, which traces anew."""
    fn = make_jit()
    return lambda: sample(fn)


def main():
    print(context_line())  # what the times below were measured on
    eager_idx = sample(next_token_logits)
    jitted = em.jit(next_token_logits)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jit_idx = sample(jitted)
    static = compile_per_size()
    sample(static)
    print(f"{T - 1} steps, context 1 .. {T - 1}")
    print(f"  jit, a compile per size (no limit):    {static.trace_count} traces")
    print(f"  jit, symbolic length (limit 8):        {jitted.trace_count} traces, "
          f"{jitted.eager_fallbacks} calls eager")
    for w in caught:
        if issubclass(w.category, em.JitWarning):
            print("  warning:", str(w.message)[:150], "...")

    # The time of the whole loop, once per round. Each round makes new jitted functions, so
    # each traces and compiles again; after the first round the kernels come from the disk
    # cache (a cold cache adds the C compiler's time to every compile).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", em.JitWarning)  # shown above, once is enough
        times = single_calls({
            "eager": lambda: lambda: sample(next_token_logits),
            "jit, a compile per size": lambda: new_loop(compile_per_size),
            "jit, dynamic dim + limit": lambda: new_loop(lambda: em.jit(next_token_logits))})
    print("the whole loop (median and IQR of the rounds):")
    for name, spread in times.items():
        print(f"  {name + ':':<26} {spread.text(1e6, 'ms')}")
    saved = decide(times["jit, a compile per size"], times["jit, dynamic dim + limit"],
                   a_name="a compile per size", b_name="the dynamic dim")
    print(f"  a compile per size / dynamic dim: {saved}")
    # Is eager still the fastest when every shape is new (each trace costs more than it saves)?
    print("  dynamic dim / eager:", decide(times["jit, dynamic dim + limit"], times["eager"],
                                            a_name="the dynamic dim", b_name="eager"))

    same = eager_idx.tolist() == jit_idx.tolist()
    bounded = jitted.trace_count <= jitted.cache_size_limit < static.trace_count
    print(f"VERDICT: {'confirmed' if same and bounded else 'refuted'} - the limit bounds "
          f"retracing ({jitted.trace_count} traces for {T - 1} lengths, instead of "
          f"{static.trace_count}; same tokens as eager: {same}); time, a compile per size / "
          f"dynamic dim: {saved.cell()}")


if __name__ == "__main__":
    main()
