"""A gradient tape: d(x^2)/dx at x = 3 is 6.

    python examples/autograd.py
"""

import execmode as em

x = em.tensor(3.0, requires_grad=True)
y = x * x
y.backward()
print(f"y = x^2 = {y.item()}, dy/dx at x = 3: {x.grad.item()}")
assert x.grad.item() == 6.0

# The tape also runs inside em.jit: backward is traced into the same graph.
w = em.nn.Parameter(em.tensor(3.0))


@em.jit
def grad_of_square():
    w.grad = None
    (w * w).backward()
    return w.grad


g = grad_of_square().item()
print("the same gradient, from a jitted function:", g)
print(f"VERDICT: {'confirmed' if g == 6.0 else 'refuted'} - the tape gives d(x^2)/dx = 6 at "
      "x = 3, eagerly and traced into a graph.")
