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
