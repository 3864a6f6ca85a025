"""PyTorch's random numbers: ``torch.manual_seed``, ``torch.Generator`` and the draws with
PyTorch's signatures (``rand``, ``randn``, ``randint``, ``randperm``, ``normal``,
``bernoulli``, ``multinomial``, the ``*_like`` ones).

Without ``generator=`` every draw is one of the engine's random ops on its one generator
(``ops/rng.py``, NumPy's PCG64), so it traces into ``em.jit`` graphs and draws the same
numbers eagerly and under jit after the same seed. ``torch.manual_seed(n)`` seeds that
generator (it is ``em.random.seed(n)``). A ``torch.Generator`` is a generator of its own:
draws given one come from it (eagerly; inside a jitted function, where draws happen at
each call, ``generator=`` is refused). The numbers differ from PyTorch's for the same seed:
the generators differ, the distributions and the reproducibility do not.
"""

from __future__ import annotations

import numpy as np

from .. import api as em
from .. import dispatch
from ..errors import ArgumentError
from ..functional.arguments import _shape_arg
from ..functional.creation import _random
from ..ops import rng


class Generator:
    """PyTorch's ``torch.Generator``: a seeded source of random numbers of its own, for
    ``randn``/``randint``/``randperm``/``DataLoader(generator=)`` and the rest. ``device``
    is accepted; draws happen on the host (as every execmode draw), then move."""

    def __init__(self, device="cpu"):
        self.device = em.Device("cpu") if device == "cpu" else device
        self.seed()

    def manual_seed(self, seed) -> Generator:
        """Reset to a known state; returns the generator, as PyTorch's does."""
        self._initial_seed = int(seed)
        self._np = np.random.default_rng(self._initial_seed & 0xFFFF_FFFF_FFFF_FFFF)
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        s = int(np.random.SeedSequence().entropy) & 0x7FFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last given."""
        return self._initial_seed

    def get_state(self) -> dict:
        """The state, as NumPy's bit generator writes it (PyTorch returns a ByteTensor)."""
        return self._numpy_generator().bit_generator.state

    def set_state(self, state: dict) -> Generator:
        """Restore a state from ``get_state()``; returns the generator."""
        self._numpy_generator().bit_generator.state = state
        return self

    def _numpy_generator(self) -> np.random.Generator:
        return self._np


class _DefaultGenerator(Generator):
    """``torch.default_generator``: the engine's own generator, which every draw without
    ``generator=`` uses (``em.random.seed`` and ``torch.manual_seed`` reset it)."""

    def __init__(self):
        self.device = em.Device("cpu")
        self._initial_seed = 0  # the engine's generator starts seeded with 0

    def manual_seed(self, seed) -> Generator:
        self._initial_seed = int(seed)
        rng.seed(self._initial_seed & 0xFFFF_FFFF_FFFF_FFFF)
        return self

    def _numpy_generator(self) -> np.random.Generator:
        return rng.generator()


default_generator = _DefaultGenerator()


def manual_seed(seed) -> Generator:
    """Seed execmode's generator (every draw, dropout and shuffle without a generator of
    its own); returns ``torch.default_generator``. One generator serves CPU and GPU draws,
    so ``torch.cuda.manual_seed_all`` is the same call."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed execmode's generator from the operating system; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed execmode's generator was last given."""
    return default_generator.initial_seed()


def get_rng_state() -> dict:
    """The generator's state (NumPy's dict; PyTorch returns a ByteTensor)."""
    return default_generator.get_state()


def set_rng_state(state) -> None:
    """Restore execmode's generator to a state from ``get_rng_state()``."""
    default_generator.set_state(state)


class _using:  # noqa: N801
    """Draw from ``generator`` within the block (the engine's own when it is None)."""

    def __init__(self, op: str, generator):
        if generator is not None and not isinstance(generator, Generator):
            raise ArgumentError(f"{op}: generator must be a torch.Generator, got "
                                f"{type(generator).__name__}")
        if generator is not None and dispatch.current_tracer() is not None:
            raise ArgumentError(
                f"{op}(generator=...) inside a jitted function: draws there happen at each "
                "call, from execmode's generator; seed it with torch.manual_seed instead")
        self._generator = generator

    def __enter__(self):
        if self._generator is not None and not isinstance(self._generator, _DefaultGenerator):
            self._context = rng.drawing_from(self._generator._numpy_generator())
            self._context.__enter__()
        else:
            self._context = None

    def __exit__(self, *exc):
        if self._context is not None:
            self._context.__exit__(*exc)
        return False


def _size(op, shape, size=None):
    """A shape from ``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))``."""
    if size is not None:
        if shape:
            raise ArgumentError(f"{op}: give the size positionally or as size=, not both")
        shape = (size,)
    return _shape_arg(shape, op)


def rand(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples in [0, 1) of the given size (float32 unless ``dtype``)."""
    with _using("rand", generator):
        return _random("random_uniform", _size("rand", shape, size), dtype, device,
                       requires_grad, low=0.0, high=1.0)


def randn(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples of the given size (float32 unless ``dtype``)."""
    with _using("randn", generator):
        return _random("random_normal", _size("randn", shape, size), dtype, device,
                       requires_grad, mean=0.0, std=1.0)


def randint(*args, size=None, low=None, high=None, generator=None, dtype=None,
            device=None, requires_grad=False):
    """PyTorch's ``randint(high, size)`` or ``randint(low, high, size)``: integers in
    [low, high) (low defaults to 0), int64 unless ``dtype``."""
    args = list(args)
    if size is None and args and isinstance(args[-1], tuple | list):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif args:
        raise ArgumentError("randint(low, high, size): too many positional arguments")
    if high is None or size is None:
        raise ArgumentError("randint needs high and size: randint(high, size) or "
                            "randint(low, high, size)")
    low = 0 if low is None else low
    if int(high) <= int(low):
        raise ArgumentError(f"randint: high={high} must be greater than low={low}")
    dtype = em.int64 if dtype is None else em.dtypes.as_dtype(dtype)
    with _using("randint", generator):
        out = _random("random_randint", _size("randint", (size,)),
                      dtype if dtype.kind in "iu" else em.int64, device, False,
                      low=int(low), high=int(high))
    out = out.to(dtype)  # PyTorch draws integers for a float dtype too
    return out.requires_grad_(True) if requires_grad else out


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``): the stable argsort of
    ``n`` uniform float64 draws, so it traces into jit graphs like every other draw."""
    n = int(n)
    if n < 0:
        raise ArgumentError(f"randperm: n must be >= 0, got {n}")
    with _using("randperm", generator):
        keys = _random("random_uniform", (n,), em.float64, device, False, low=0.0, high=1.0)
    out = em.argsort(keys)
    return out if dtype is None else out.to(dtype)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """PyTorch's ``normal``: ``normal(mean, std, size)`` with numbers, or with a tensor
    ``mean`` and/or ``std`` (one sample per element, broadcast)."""
    tensors = [v for v in (mean, std) if isinstance(v, em.Tensor)]
    with _using("normal", generator):
        if not tensors:
            if size is None:
                raise ArgumentError("normal(mean, std, size): give size when mean and std "
                                    "are numbers")
            return _random("random_normal", _size("normal", (size,)), dtype, device,
                           requires_grad, mean=float(mean), std=float(std))
        shape = np.broadcast_shapes(*(t.shape for t in tensors))
        noise = _random("random_normal", tuple(shape), tensors[0].dtype, tensors[0].device,
                        False, mean=0.0, std=1.0)
    return mean + std * noise


def bernoulli(input, p=None, *, generator=None):  # noqa: A002 - PyTorch's name
    """1 where a uniform draw falls below the probability (``input``'s values, or ``p``),
    else 0, in ``input``'s dtype."""
    probs = input if p is None else em.full_like(input, p)
    with _using("bernoulli", generator):
        u = _random("random_uniform", tuple(input.shape), em.float64, input.device, False,
                    low=0.0, high=1.0)
    return em.astype(em.less(u, probs), input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    """Indices drawn from each row of (unnormalised) probabilities (int64)."""
    with _using("multinomial", generator):
        return em.multinomial(input, num_samples, replacement)


def rand_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """Uniform samples in [0, 1) of ``input``'s shape (dtype and device unless given)."""
    return rand(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """Standard normal samples of ``input``'s shape (dtype and device unless given)."""
    return randn(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None):  # noqa: A002
    """Integers in [low, high) of ``input``'s shape and dtype (``randint_like(x, high)`` too)."""
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype,
                   device=device or input.device)


__all__ = ["Generator", "bernoulli", "default_generator", "get_rng_state", "initial_seed",
           "manual_seed", "multinomial", "normal", "rand", "rand_like", "randint",
           "randint_like", "randn", "randn_like", "randperm", "seed", "set_rng_state"]
