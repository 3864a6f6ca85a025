import execmode as em

x = em.ones(4)
for _ in range(400):
    x = x * 1.0001
print("done", round(float(x.sum()), 3))
