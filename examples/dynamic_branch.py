"""The seeds' dynamic_network: an `if` on a tensor's value breaks the graph.

em.explain shows where and why, like torch._dynamo.explain.

    python examples/dynamic_branch.py
"""

import execmode as em


def dynamic_network(x):
    h = em.tanh(x * 2.0)
    if h.mean() > 0:          # Python needs the value here: a graph break
        out = h * 3.0
    else:
        out = h - 1.0
    return out.sum()


x = em.tensor([0.5, -0.25, 1.0])
print(em.explain(dynamic_network, x))

f = em.jit(dynamic_network)
for values in ([0.5, -0.25, 1.0], [-1.0, -2.0, 0.5], [2.0, 0.0, 1.0]):
    print(values, "->", f(em.tensor(values)).item())
print(f"traced {f.trace_count} times, compiled {f.compile_count} segments "
      "(the Python re-runs on every call; each segment compiles once)")

# A plain tracer (torch.jit.trace) never breaks: it records the branch the first call took
# and replays it for every input, silently.
plain = em.jit(dynamic_network, on_break="bake")
first = em.tensor([0.5, -0.25, 1.0])         # mean > 0: traces the `* 3.0` branch
other = em.tensor([-1.0, -2.0, 0.5])         # mean < 0: eager takes the `- 1.0` branch
plain(first)
print("\nplain tracer on an input that should take the other branch:")
print(f"  eager {dynamic_network(other).item():.4f}   plain tracer {plain(other).item():.4f}"
      f"   em.jit with breaks {f(other).item():.4f}")
print(em.explain(plain, first))
wrong = abs(plain(other).item() - dynamic_network(other).item()) > 1e-4
right = abs(f(other).item() - dynamic_network(other).item()) < 1e-4
print(f"VERDICT: {'confirmed' if wrong and right else 'refuted'} - the if on x.mean() breaks "
      "the graph at its line (both branches stay correct), while a plain tracer bakes the "
      "first branch and silently returns the wrong value for the other.")
