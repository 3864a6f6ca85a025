import execmode as em

y = em.ones(2)
for _ in range(5):
    y = y * 2.0
z = y + 1.0
