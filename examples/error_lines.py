"""In graph mode, other frameworks' errors point at graph-construction code; execmode's
point at the user's line, eagerly and under jit alike.

    python examples/error_lines.py
"""

import execmode as em


def layer(x, w):
    return em.relu(x @ w)          # the bad matmul is on this line


def model(x, w1, w2):
    h = layer(x, w1)
    return layer(h, w2)


x, w1, w2 = em.randn(8, 16), em.randn(16, 32), em.randn(16, 4)   # w2 should be (32, 4)
messages = {}
for mode, fn in (("eager", model), ("jit", em.jit(model))):
    try:
        fn(x, w1, w2)
    except em.ShapeError as exc:
        messages[mode] = str(exc)
        print(f"{mode}:\n  {str(exc).replace(chr(10), chr(10) + '  ')}")
line = layer.__code__.co_firstlineno + 1
ok = all(f"error_lines.py:{line} in layer" in m for m in messages.values())
print(f"VERDICT: {'confirmed' if ok else 'refuted'} - both modes name the op, the operand "
      f"shapes and error_lines.py:{line}, the user's own line, not a framework frame.")
