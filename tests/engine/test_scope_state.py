"""Named scopes entered by decorated composites and by Module.__call__ (both inline the
context manager for speed): the path nests, is restored after an exception, and stays
per thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import execmode as em
from execmode import scope
from execmode.instrument import listening


class _Recorder:
    def __init__(self):
        self.scopes = []

    def on_op(self, event, output):
        self.scopes.append(event.scope)


class _Failing(em.nn.Module):
    def forward(self, x):
        raise RuntimeError("boom")


def test_module_and_function_scopes_nest_and_unwind():
    model = em.nn.Sequential(em.nn.Linear(3, 2), em.nn.ReLU())
    x = em.tensor(np.ones((1, 3), np.float32))
    rec = _Recorder()
    with em.no_grad(), listening(rec), em.named_scope("outer"):
        model(x)
        assert scope.current_scope() == "outer"
    assert scope.current_scope() == ""
    assert all(s.startswith("outer/") for s in rec.scopes), rec.scopes
    assert any("/linear" in s for s in rec.scopes), rec.scopes


def test_an_exception_restores_the_scope():
    @em.named_scope("inner")
    def fails():
        raise ValueError("x")

    with em.named_scope("outer"):
        with pytest.raises(ValueError):
            fails()
        assert scope.current_scope() == "outer"
        with pytest.raises(RuntimeError):
            _Failing()(em.tensor(np.ones(2, np.float32)))
        assert scope.current_scope() == "outer"
    assert scope.current_scope() == ""


def test_scopes_are_per_thread():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    @em.named_scope("worker")
    def work():
        seen["worker"] = scope.current_scope()
        inside.set()
        release.wait(10)

    t = threading.Thread(target=work)
    with em.named_scope("main"):
        t.start()
        inside.wait(10)
        seen["main"] = scope.current_scope()
        release.set()
        t.join(10)
    assert seen == {"worker": "worker", "main": "main"}
