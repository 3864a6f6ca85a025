import execmode as em

x = em.tensor([1.0, 2.0, 3.0])
y = x * 2.0
z = em.exp(y)
w = z.sum()
print("result", round(w.item(), 3))
