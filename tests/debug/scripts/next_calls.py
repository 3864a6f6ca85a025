import execmode as em


def helper(v):
    return v * 3.0


def inner(a):
    b = a + 1.0
    return b


def outer(x):
    y = inner(x)
    z = helper(y)
    w = z - 1.0
    return w


x = em.ones(3)
r = outer(x)
s = sum([r, r, r])
t = em.exp(s)
