"""Raises after a few ops: the TUI shows the traceback and the failing op's tensors."""
import execmode as em

a = em.ones(2, 3)
b = em.ones(4, 5)
c = a + 1.0
print("about to fail")
d = a @ b              # shapes do not fit: ShapeError
print("never printed", d)
