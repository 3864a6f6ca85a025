"""A training-loop shape for the Variables pane, the evaluator and Python conditions."""
import execmode as em


class Opt:
    __slots__ = ("lr", "momentum")

    def __init__(self):
        self.lr = 0.5
        self.momentum = 0.9


class Config:
    def __init__(self):
        self.epochs = 3
        self.name = "demo"

    @property
    def explodes(self):
        raise RuntimeError("a property that raises")


opt = Opt()
config = Config()
history = {"loss": [], "tag": "x" * 5000}
ran_in_evaluation = []


def note(value):
    ran_in_evaluation.append(value)
    return value


def train(steps):
    w = em.tensor([1.0, 2.0, 3.0])
    for step in range(steps):
        w = w * 2.0                              # line 37
        opt.lr = opt.lr / 2
        history["loss"].append(step)
    return w


print("result", train(3).numpy().tolist(), len(ran_in_evaluation))
