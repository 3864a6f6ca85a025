"""A NaN planted in the middle of an eager computation: log of a negative number."""
import execmode as em


def scale(t):
    return t * 3.0


a = em.ones(8) * -1.0
b = scale(a)
c = em.log(b)          # the planted NaN: log(-3)
d = c + 1.0
print("done", d.shape)
