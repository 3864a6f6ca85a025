"""Recurrent layers: RNN, LSTM, GRU and their cells, with PyTorch's parameters, layouts
and gate order.

Parameters are named as PyTorch names them (``weight_ih_l0``, ``weight_hh_l0``,
``bias_ih_l0``, ``bias_hh_l0``, ``..._reverse`` for the backward direction), in the same
order, with the same shapes (the gates stacked: LSTM's i, f, g, o; GRU's r, z, n), so a
PyTorch ``state_dict`` loads one to one. Each is initialised uniform in
+-1/sqrt(hidden_size), as PyTorch's.

A layer multiplies the whole input sequence by ``W_ih`` in one matmul, then steps through
time with ``h @ W_hh.T``: a Python loop over the sequence, so under ``em.jit`` the graph
holds every step (fine for the short sequences of small models; a long sequence makes a
long graph). Packed sequences (``pack_padded_sequence``) and LSTM's ``proj_size`` are not
supported.
"""

from __future__ import annotations

import math

from .. import functional as F
from .. import random as em_random
from ..errors import ArgumentError, ShapeError
from ..op_errors import op_error
from . import functional as NF
from .dropout import check_probability, dropout
from .module import Module, Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _uniform(shape, hidden, dtype, device):
    bound = 1.0 / math.sqrt(hidden) if hidden > 0 else 0.0
    return Parameter(em_random.uniform(shape, -bound, bound, dtype=dtype, device=device))


# --- one time step of each kind (shared by the layers and the cells) ---------------------

def _rnn_step(x_part, h, w_hh, b_hh, relu):
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh); ``x_part`` holds the x terms."""
    pre = x_part + NF.linear(h, w_hh, b_hh)
    return NF.relu(pre) if relu else F.tanh(pre)


def _lstm_step(x_part, state, w_hh, b_hh):
    h, c = state
    gates = x_part + NF.linear(h, w_hh, b_hh)
    i, f, g, o = F.chunk(gates, 4, dim=-1)
    c = NF.sigmoid(f) * c + NF.sigmoid(i) * F.tanh(g)
    return NF.sigmoid(o) * F.tanh(c), c


def _gru_step(x_part, h, w_hh, b_hh):
    xr, xz, xn = F.chunk(x_part, 3, dim=-1)
    hr, hz, hn = F.chunk(NF.linear(h, w_hh, b_hh), 3, dim=-1)
    r = NF.sigmoid(xr + hr)
    z = NF.sigmoid(xz + hz)
    n = F.tanh(xn + r * hn)
    return (1 - z) * n + z * h


# --- the layers ------------------------------------------------------------------------------

class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters per layer and direction, the layouts, the
    loop over layers and time."""

    mode = "RNN_TANH"

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, *, device=None,
                 dtype=None):
        super().__init__()
        name = type(self).__name__
        for label, value in (("input_size", input_size), ("hidden_size", hidden_size),
                             ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise op_error(ArgumentError, name, (),
                               f"{label} must be a positive int, got {value!r}")
        if proj_size:
            raise op_error(ArgumentError, name, (), "proj_size is not supported")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.dropout = check_probability(name, "dropout", dropout, ())
        self.bidirectional = bool(bidirectional)
        self.proj_size = 0
        gate_size = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                setattr(self, f"weight_ih{suffix}",
                        _uniform((gate_size, layer_input), hidden_size, dtype, device))
                setattr(self, f"weight_hh{suffix}",
                        _uniform((gate_size, hidden_size), hidden_size, dtype, device))
                if bias:
                    setattr(self, f"bias_ih{suffix}",
                            _uniform((gate_size,), hidden_size, dtype, device))
                    setattr(self, f"bias_hh{suffix}",
                            _uniform((gate_size,), hidden_size, dtype, device))

    def _weights(self, layer: int, direction: int):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = self.__dict__.get
        return (get(f"weight_ih{suffix}"), get(f"weight_hh{suffix}"),
                get(f"bias_ih{suffix}"), get(f"bias_hh{suffix}"))

    @property
    def all_weights(self) -> list:
        """Per layer and direction: [w_ih, w_hh, b_ih, b_hh] (PyTorch's property)."""
        directions = 2 if self.bidirectional else 1
        return [[w for w in self._weights(layer, d) if w is not None]
                for layer in range(self.num_layers) for d in range(directions)]

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch compacts cuDNN's weights; execmode has nothing to compact)."""

    def _layout(self, x):
        """(L, N, H_in) from any accepted layout; whether the input was unbatched."""
        name = type(self).__name__
        x = F._require_tensor(name, x)
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            layout = "(N, L, H_in)" if self.batch_first else "(L, N, H_in)"
            raise op_error(ShapeError, name, (x,),
                           f"expects input {layout} or (L, H_in) with H_in = "
                           f"{self.input_size}, got shape {tuple(x.shape)}")
        if x.ndim == 2:
            return F.expand_dims(x, 1), True
        return (F.swapaxes(x, 0, 1) if self.batch_first else x), False

    def _initial(self, hx, batch: int, unbatched: bool, like, what: str = "hx"):
        """h0 (or c0) as (layers * directions, N, H): zeros when None."""
        directions = 2 if self.bidirectional else 1
        shape = (self.num_layers * directions, batch, self.hidden_size)
        if hx is None:
            return F.zeros(shape, dtype=like.dtype, device=like.device)
        hx = F._require_tensor(type(self).__name__, hx)
        if unbatched:
            hx = F.expand_dims(hx, 1)
        if tuple(hx.shape) != shape:
            want = shape[:1] + shape[2:] if unbatched else shape
            raise op_error(ShapeError, type(self).__name__, (like, hx),
                           f"expects {what} of shape {want}, got "
                           f"{tuple(hx.shape) if not unbatched else tuple(hx.shape[::2])}")
        return hx

    def _run(self, x, states):
        """Every layer over the sequence. ``states``: per layer and direction, the initial
        state (h, or (h, c) for LSTM). Returns the last layer's outputs (L, N, D*H) and
        the final states in the same order."""
        directions = 2 if self.bidirectional else 1
        finals = []
        length = x.shape[0]
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
                x_parts = NF.linear(x, w_ih, b_ih)         # every step's input term at once
                state = states[layer * directions + direction]
                steps = [None] * length
                order = range(length - 1, -1, -1) if direction else range(length)
                for t in order:
                    state = self._cell(x_parts[t], state, w_hh, b_hh)
                    steps[t] = state[0] if isinstance(state, tuple) else state
                outputs.append(F.stack(steps, axis=0))
                finals.append(state)
            x = outputs[0] if directions == 1 else F.concat(outputs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = dropout(x, self.dropout, True)
        return x, finals

    def _cell(self, x_part, state, w_hh, b_hh):
        raise NotImplementedError

    def _finish(self, out, unbatched):
        if unbatched:
            return F.squeeze(out, axis=1)
        return F.swapaxes(out, 0, 1) if self.batch_first else out

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu with
    ``nonlinearity="relu"``). ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, *, device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise op_error(ArgumentError, "RNN", (),
                           f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)

    def _cell(self, x_part, state, w_hh, b_hh):
        return _rnn_step(x_part, state, w_hh, b_hh, self.nonlinearity == "relu")

    def forward(self, input, hx=None):  # noqa: A002 - PyTorch's names
        """Output (L, N, D*H) (batch_first: (N, L, D*H)) and h_n (layers*D, N, H)."""
        x, unbatched = self._layout(input)
        h0 = self._initial(hx, x.shape[1], unbatched, x)
        out, finals = self._run(x, [h0[k] for k in range(h0.shape[0])])
        h_n = F.stack(finals, axis=0)
        return self._finish(out, unbatched), (F.squeeze(h_n, axis=1) if unbatched else h_n)


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's gates (i, f, g, o stacked in that order).
    ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, *, device=None,
                 dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)

    def _cell(self, x_part, state, w_hh, b_hh):
        return _lstm_step(x_part, state, w_hh, b_hh)

    def forward(self, input, hx=None):  # noqa: A002
        """Output (L, N, D*H) and (h_n, c_n), each (layers*D, N, H)."""
        x, unbatched = self._layout(input)
        if hx is not None and (not isinstance(hx, tuple | list) or len(hx) != 2):
            raise op_error(ArgumentError, "LSTM", (x,), "hx must be a pair (h_0, c_0)")
        h0 = self._initial(None if hx is None else hx[0], x.shape[1], unbatched, x, "h_0")
        c0 = self._initial(None if hx is None else hx[1], x.shape[1], unbatched, x, "c_0")
        out, finals = self._run(x, [(h0[k], c0[k]) for k in range(h0.shape[0])])
        h_n = F.stack([h for h, _ in finals], axis=0)
        c_n = F.stack([c for _, c in finals], axis=0)
        if unbatched:
            h_n, c_n = F.squeeze(h_n, axis=1), F.squeeze(c_n, axis=1)
        return self._finish(out, unbatched), (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's gates (r, z, n stacked in that order, the reset
    gate applied to ``h W_hn^T + b_hn``). ``forward(input, hx=None)`` returns
    ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, *, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)

    def _cell(self, x_part, state, w_hh, b_hh):
        return _gru_step(x_part, state, w_hh, b_hh)

    def forward(self, input, hx=None):  # noqa: A002
        """Output (L, N, D*H) and h_n (layers*D, N, H)."""
        x, unbatched = self._layout(input)
        h0 = self._initial(hx, x.shape[1], unbatched, x)
        out, finals = self._run(x, [h0[k] for k in range(h0.shape[0])])
        h_n = F.stack(finals, axis=0)
        return self._finish(out, unbatched), (F.squeeze(h_n, axis=1) if unbatched else h_n)


# --- the cells -------------------------------------------------------------------------------

class RNNCellBase(Module):
    """What the cells share: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *,
                 device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bool(bias)
        g = self.gates * hidden_size
        self.weight_ih = _uniform((g, input_size), hidden_size, dtype, device)
        self.weight_hh = _uniform((g, hidden_size), hidden_size, dtype, device)
        self.bias_ih = _uniform((g,), hidden_size, dtype, device) if bias else None
        self.bias_hh = _uniform((g,), hidden_size, dtype, device) if bias else None

    def _input(self, x):
        name = type(self).__name__
        x = F._require_tensor(name, x)
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise op_error(ShapeError, name, (x,),
                           f"expects input (N, {self.input_size}) or ({self.input_size},), "
                           f"got shape {tuple(x.shape)}")
        return (F.expand_dims(x, 0), True) if x.ndim == 1 else (x, False)

    def _state(self, h, x, unbatched):
        if h is None:
            return F.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
        h = F._require_tensor(type(self).__name__, h)
        return F.expand_dims(h, 0) if unbatched else h

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", *, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise op_error(ArgumentError, "RNNCell", (),
                           f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002
        """h' (N, H) from input (N, H_in) and hx (N, H) (zeros when None)."""
        x, unbatched = self._input(input)
        h = _rnn_step(NF.linear(x, self.weight_ih, self.bias_ih),
                      self._state(hx, x, unbatched), self.weight_hh, self.bias_hh,
                      self.nonlinearity == "relu")
        return F.squeeze(h, axis=0) if unbatched else h


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c')`` from input and ``(h, c)``."""

    gates = 4

    def forward(self, input, hx=None):  # noqa: A002
        """(h', c'), each (N, H), from input (N, H_in) and hx = (h, c) (zeros when None)."""
        x, unbatched = self._input(input)
        h, c = (None, None) if hx is None else hx
        h, c = _lstm_step(NF.linear(x, self.weight_ih, self.bias_ih),
                          (self._state(h, x, unbatched), self._state(c, x, unbatched)),
                          self.weight_hh, self.bias_hh)
        if unbatched:
            return F.squeeze(h, axis=0), F.squeeze(c, axis=0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step: ``h'`` from input and ``h``."""

    gates = 3

    def forward(self, input, hx=None):  # noqa: A002
        """h' (N, H) from input (N, H_in) and hx (N, H) (zeros when None)."""
        x, unbatched = self._input(input)
        h = _gru_step(NF.linear(x, self.weight_ih, self.bias_ih),
                      self._state(hx, x, unbatched), self.weight_hh, self.bias_hh)
        return F.squeeze(h, axis=0) if unbatched else h


__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell",
           "RNNCellBase"]
