"""An op whose breakpoint condition fails: reading cfg.explodes raises (restart tests)."""
import execmode as em


class Config:
    @property
    def explodes(self):
        raise RuntimeError("a property that raises")


cfg = Config()
x = em.ones(3) * 2.0
y = em.exp(x)
print("done", float(y.sum().item()))
