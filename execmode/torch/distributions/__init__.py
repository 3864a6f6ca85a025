"""``torch.distributions`` basics: ``Categorical`` and ``Normal`` with ``sample``,
``log_prob`` and ``entropy`` (``rsample`` for Normal), the pieces policy-gradient and VAE
programs use. Samples come from execmode's seeded generator (``torch.manual_seed``), so
they differ from PyTorch's numbers but not in distribution; ``log_prob`` and ``entropy``
are differentiable execmode expressions, so they train under ``backward()`` and ``em.jit``.
"""

from __future__ import annotations

import math

import numpy as np

from ... import api as em
from ..._tensor import Tensor
from ...errors import ArgumentError


def _as_tensor(value, like=None):
    if isinstance(value, Tensor):
        return value
    dtype = like.dtype if isinstance(like, Tensor) and like.dtype.kind == "f" else em.float32
    return em.tensor(value, dtype=dtype)


def _shape(sample_shape) -> tuple:
    if isinstance(sample_shape, int):
        return (sample_shape,)
    return tuple(sample_shape)


class Distribution:
    """The base of the distributions here: ``batch_shape``, ``sample``, ``log_prob``,
    ``entropy``, and ``mean``/``variance``/``stddev`` where defined."""

    batch_shape: tuple = ()

    def sample(self, sample_shape=()):
        """Samples of shape ``sample_shape + batch_shape``."""
        raise NotImplementedError

    def log_prob(self, value):
        """The log-density (log-probability) of ``value``."""
        raise NotImplementedError

    def entropy(self):
        """The entropy, per batch element."""
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation (the square root of ``variance``)."""
        return em.sqrt(self.variance)


class Categorical(Distribution):
    """A categorical distribution over the last axis of ``probs`` (unnormalised
    probabilities) or ``logits`` (unnormalised log-probabilities); give one."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ArgumentError("Categorical: give probs or logits, not both")
        if probs is not None:
            probs = _as_tensor(probs)
            self.probs = probs / em.sum(probs, axis=-1, keepdims=True)
            self.logits = em.log(self.probs)
        else:
            logits = _as_tensor(logits)
            self.logits = logits - em.logsumexp(logits, axis=-1, keepdims=True)
            self.probs = em.exp(self.logits)
        if self.probs.ndim < 1:
            raise ArgumentError("Categorical: probs/logits need at least one axis")
        self.batch_shape = tuple(self.probs.shape[:-1])
        self._num_events = self.probs.shape[-1]

    @property
    def param_shape(self) -> tuple:
        """The shape of ``probs`` (batch shape + number of categories)."""
        return tuple(self.probs.shape)

    def sample(self, sample_shape=()):
        """Category indices (int64) of shape ``sample_shape + batch_shape``."""
        shape = _shape(sample_shape)
        n = math.prod(shape) if shape else 1
        with em.no_grad():
            rows = em.reshape(self.probs, (-1, self._num_events))
            drawn = em.multinomial(rows, n, replacement=True)  # (batch, n)
        drawn = em.permute_dims(drawn, (1, 0)) if drawn.ndim == 2 else drawn
        return em.reshape(drawn, shape + self.batch_shape)

    def log_prob(self, value):
        """log p(value) for integer ``value`` (broadcast against the batch)."""
        value = _as_tensor(value).astype(em.int64)
        logits = self.logits
        if value.ndim > logits.ndim - 1:
            logits = em.broadcast_to(logits, tuple(value.shape) + (self._num_events,))
        else:
            value = em.broadcast_to(value, tuple(logits.shape[:-1]))
        picked = em.take_along_axis(logits, em.expand_dims(value, axis=-1), axis=-1)
        return em.squeeze(picked, axis=-1)

    def entropy(self):
        """-sum p log p over the categories (0 log 0 counts as 0)."""
        plogp = em.where(em.greater(self.probs, 0), self.probs * self.logits, 0.0)
        return em.negative(em.sum(plogp, axis=-1))

    @property
    def mean(self):
        """Refused: a categorical distribution has no mean."""
        raise ArgumentError("Categorical has no mean")


class Normal(Distribution):
    """The normal distribution N(loc, scale^2), batched over broadcast ``loc`` and
    ``scale`` (tensors or numbers)."""

    def __init__(self, loc, scale, validate_args=None):
        self.loc = _as_tensor(loc, scale)
        self.scale = _as_tensor(scale, self.loc)
        self.batch_shape = tuple(np.broadcast_shapes(self.loc.shape, self.scale.shape))

    @property
    def mean(self):
        """``loc``, broadcast to the batch shape."""
        return em.broadcast_to(self.loc, self.batch_shape)

    @property
    def variance(self):
        """``scale ** 2``, broadcast to the batch shape."""
        return em.broadcast_to(self.scale * self.scale, self.batch_shape)

    def rsample(self, sample_shape=()):
        """``loc + scale * eps``, eps ~ N(0, 1): differentiable in loc and scale (the
        reparameterisation trick)."""
        shape = _shape(sample_shape) + self.batch_shape
        eps = em.randn(*shape, dtype=self.loc.dtype)
        return self.loc + self.scale * eps

    def sample(self, sample_shape=()):
        """Samples of shape ``sample_shape + batch_shape``, cut from autograd."""
        with em.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        """log N(value; loc, scale^2), differentiable in every argument."""
        value = _as_tensor(value, self.loc)
        z = (value - self.loc) / self.scale
        return -0.5 * z * z - em.log(self.scale) - 0.5 * math.log(2 * math.pi)

    def entropy(self):
        """0.5 + 0.5 log(2 pi) + log(scale), per batch element."""
        return em.broadcast_to(0.5 + 0.5 * math.log(2 * math.pi) + em.log(self.scale),
                               self.batch_shape)


__all__ = ["Categorical", "Distribution", "Normal"]


def __getattr__(name: str):
    from ...aliases import missing_attribute

    raise missing_attribute(__name__, name)
