import execmode as em


def inner(a):
    b = a + 1.0
    c = b * b
    return c


def outer(x):
    y = inner(x)
    z = y - 1.0
    return z


x = em.ones(3)
r = outer(x)
s = r.sum()
