import execmode as em

w = em.tensor([1.0, -2.0, 3.0])


@em.jit
def f(x):
    y = x * w
    if y.sum() > 0:          # a graph break: Python needs the value
        return y + 1.0
    return y - 1.0


print("result", f(em.tensor([1.0, 1.0, 1.0])).numpy().tolist())
