"""A name that does not exist says what to use instead, or that PyTorch's is not
supported; Python's "Did you mean" is never a wrong guess for a real spelling of another
API (``long`` -> ``log``, ``sinh`` -> ``sin``, ``type`` -> ``dtype``, ``backends`` ->
``backend`` were reported), and an error never prints a whole tensor."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pytorch_twins import torch_or_skip

import execmode as em
import execmode.torch as torch
from execmode.aliases import TORCH_FRONT_END_NAMES
from execmode.pytorch_names import NAMES


def _traceback_line(code: str) -> str:
    """The last line Python prints for the error ``code`` raises (with any suggestion:
    CPython 3.11 adds it when printing, so a child process prints it)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    return done.stderr.strip().splitlines()[-1]


# Slow tier: a fresh interpreter.
@pytest.mark.slow
def test_reported_misleading_suggestions_are_gone():
    # as printed (slow tier: two child processes; the fast tests check obj is None)
    code = ("import execmode as em, execmode.torch as torch\n"
            "checks = [lambda: em.long, lambda: em.sinh(em.ones(1)).type, lambda: em.backends,"
            " lambda: torch.nn.CrossEntropyLos, lambda: torch.stft]\n"
            "import traceback\n"
            "for c in checks:\n"
            "    try: c()\n"
            "    except AttributeError as e: sys.excepthook(type(e), e, None)\n")
    done = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True,
                          text=True, timeout=120, check=True)
    printed = done.stderr
    assert printed.count("Did you mean") == 1 and "Did you mean: 'CrossEntropyLoss'" in printed
    assert "em.long: use em.int64" in printed
    assert "em.backends: PyTorch's spelling, in execmode.torch" in printed
    assert "torch.stft: PyTorch's torch.stft is not supported" in printed
    # a plain typo still gets Python's help
    assert "Did you mean: 'matmul'" in _traceback_line("import execmode as em; em.matmull")


@pytest.mark.parametrize("where, name, says", [
    (em, "long", "em.int64"), (em, "type", "x.dtype"), (em, "backends", "execmode.torch"),
    (em, "bmm", "use em.matmul"), (em, "randperm", "execmode.torch"),
    (em, "float", "em.float32"), (torch, "vmap", "not supported"),
    (torch, "set_default_tensor_type", "float32"), (torch, "stft", "not supported"),
    (em.nn, "DataParallel", "one device"), (torch.nn, "Bilinear", "not supported"),
    (torch.nn.functional, "fold", "not supported"), (torch.optim, "SparseAdam", "not supported"),
    (torch.cuda, "Event", "not supported"), (torch.utils.data, "IterDataPipe", "not supported"),
    (torch.distributions, "Beta", "not supported"),
])
def test_missing_names_say_what_to_do(where, name, says):
    # obj=None: Python adds no "Did you mean" (its suggestions read the error's obj)
    with pytest.raises(AttributeError) as info:
        getattr(where, name)
    assert says in str(info.value) and info.value.obj is None
    # the rest of the reported names exist now
    assert em.sinh and em.ones(1).long().dtype == em.int64 and em.ones(1).type()


def test_tensor_names_of_pytorch_say_so():
    x = torch.ones(2)
    for name, says in (("neg", "-x"), ("is_sparse", "not supported"),
                       ("half", "float16"), ("storage", "internal")):
        with pytest.raises(AttributeError, match=says):
            getattr(x, name)
    assert getattr(x, "is_sparse", None) is None and not hasattr(x, "to_sparse")


def test_a_tensor_in_an_axis_never_prints_its_values():
    x = torch.zeros(50, 50)
    for call in (lambda: torch.sum(x, x), lambda: torch.max(x, x, 1),
                 lambda: torch.mean(x, x)):
        with pytest.raises(em.ExecmodeError) as info:
            call()
        assert "0., 0." not in str(info.value) and len(str(info.value)) < 400
    assert torch.max(x, x).shape == (50, 50)  # two tensors: the elementwise maximum


def test_the_front_end_names_table_is_the_front_ends():
    # aliases.TORCH_FRONT_END_NAMES: the em.<name> misses that execmode.torch answers.
    assert not [n for n in TORCH_FRONT_END_NAMES if not hasattr(torch, n) or hasattr(em, n)]
    added = {n for n in dir(torch) if not n.startswith("_") and not hasattr(em, n)}
    assert added <= TORCH_FRONT_END_NAMES


def test_every_listed_pytorch_name_is_real():
    real = torch_or_skip()
    import torch.nn.functional as real_f

    for space, obj in (("torch", real), ("Tensor", real.Tensor), ("torch.nn", real.nn),
                       ("torch.nn.functional", real_f), ("torch.optim", real.optim)):
        unknown = [n for n in NAMES[space] if not hasattr(obj, n)]
        assert len(unknown) <= len(NAMES[space]) // 20, (space, unknown[:10])
