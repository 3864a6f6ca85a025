"""Graph mode keeps eager's state semantics: one regression test per class of silent
eager/jit mismatch found by the differential fuzzer (issue 13). Each test states what eager
does; the jitted function must do exactly the same."""

from __future__ import annotations

import threading

import numpy as np

import execmode as em


def test_two_threads_trace_at_once_without_sharing_a_tracer():
    """A trace in one thread must not capture another thread's eager ops (class 10)."""
    inside = threading.Event()
    resume = threading.Event()

    @em.jit
    def slow(x):
        y = x * 2
        inside.set()
        resume.wait(10)  # hold the trace open while the other thread works
        return y + 1

    result = {}

    def tracer_thread():
        result["jit"] = slow(em.tensor([1.0, 2.0]))

    t = threading.Thread(target=tracer_thread)
    t.start()
    assert inside.wait(10)
    eager = em.tensor([10.0]) * 3  # runs eagerly in this thread while the other traces
    resume.set()
    t.join(10)
    assert not eager.is_traced
    np.testing.assert_array_equal(eager.numpy(), [30.0])
    np.testing.assert_array_equal(result["jit"].numpy(), [3.0, 5.0])
    assert len(slow.concrete_functions[0].graphs[0].op_nodes) == 2  # mul, add: nothing else


def test_jitted_function_called_from_two_threads_gives_eager_results():
    @em.jit
    def f(x):
        return (x * x).sum() + x.mean()

    data = [np.arange(n, dtype=np.float32) for n in (3, 4, 5, 6)] * 5
    out = [None] * len(data)

    def work(i):
        out[i] = f(em.tensor(data[i])).item()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(data))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for a, got in zip(data, out):
        assert got == em.tensor((a * a).sum() + a.mean()).item()
