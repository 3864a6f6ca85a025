"""Three eager ops on three lines, then a print (the stepping test)."""
import execmode as em

x = em.ones(3, 4)
y = x * 2.0
z = em.exp(y)
total = z.sum()
print("total", round(float(total.item()), 3))
