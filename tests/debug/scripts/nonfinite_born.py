import execmode as em

x = em.tensor([0.0, 1.0])
y = em.log(x)          # -inf appears
z = y * 0.0            # nan appears
w = z + 1.0            # carried on
v = w.sum()            # carried on
u = em.log(x) * 0.0    # appears again: a new occurrence
print("done")
