"""The one dispatch point: every op of every mode passes through :func:`apply`.

Like JAX's ``bind``: the op code does not know which mode it runs in. While a trace is
active, ops are handed to the tracer, which adds graph nodes; otherwise they run eagerly on
NumPy or CuPy. Autograd recording and instrumentation hook in here, and cost one flag check
per op when nobody listens.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings

import numpy as np

from . import host_memory, instrument, watched_composites
from . import scope as _scope
from ._tensor import SCALAR_TYPES, Tensor
from .backend import CPU, as_device, cuda_device_count, device_of_array, xp_for
from .dispatch_checks import explain_failure, mixed_devices, not_a_tensor
from .dispatch_events import _EAGER, _NO_ATTRS, emit_op, emit_operator_event, emit_unary_event
from .errors import ExecmodeError
from .instrument import OpEvent, _on_op, _seq  # shared objects: the list is mutated in place
from .ops.complex_grad import COMPLEX_DIFFERENTIABLE
from .source import _locations, user_location
from .tape import GradNode, without_complex_gradient
from .watched_composites import count as count_declined

# NumPy warns (divide by zero in log, invalid value in sqrt, ...) from inside execmode's
# implementations, pointing at our lines. Like PyTorch, the engine returns Inf/NaN quietly;
# NaN breakpoints are the tool for finding them. The user's own NumPy calls still warn.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"execmode(\.|$)")

# The C operators read these from this module's dict by name (execmode/native/__init__.py,
# MODULE_STATE; tests/codegen/test_native_contract.py checks each exists here).
_READ_BY_THE_C = (_scope, _EAGER, _NO_ATTRS, CPU, OpEvent, _on_op, _seq, _locations,
                  user_location)

# Eager ops' arrays reuse warm heap pages instead of faulting fresh ones in (host_memory.py).
host_memory.configure()

# --- the flags read on every op --------------------------------------------------------
_tracing = 0            # traces active in any thread (each thread has its own tracer)
_listening = False      # an instrumentation listener wants op events
_before = False         # a listener wants to run before each op (the debugger)
_plain = True           # no tracer and no listener: the fast path may be taken
# Listeners that want events only after ops (no tracer, no debugger before ops): the
# operators take their fast path and then emit the op (the C operators read this too).
_fast_with_events = False
# Autograd records unless em.no_grad() is active in the calling thread. Grad mode is per
# thread (as in PyTorch); this flag is True while it is on in every thread, so the hot
# path reads one module flag and asks the thread only while some thread has it off.
_grad_enabled = True

_perf_ns = time.perf_counter_ns
_getframe = sys._getframe
_next_seq = _seq.__next__
_new = object.__new__
_ndarray = np.ndarray
_np_generic = np.generic


# A recorder's op ring (profilers/native.py), when it is the only op listener and nobody
# wants to run before ops: its entry points take the op in C and return True, or False
# when the op must take the Python path (an OpEvent for the listeners).
_native_binary = None   # ring.binary(name, a, b, out, t0): the inlined operators
_native_general = None  # ring.general(name, inputs, attrs, out, t0, device, skip): run_eager,
#                         and the unary functions' fast path


def set_listening(on: bool, before: bool) -> None:
    global _listening, _before, _plain, _fast_with_events, _native_binary, _native_general
    _listening, _before = on, before
    _plain = not _tracing and not _listening
    _fast_with_events = _listening and not _before and not _tracing
    sink = _native_sink() if on and not before else None
    _native_binary, _native_general = sink if sink is not None else (None, None)
    if not on:  # nobody counts composites' backward calls any more (watched_composites.py)
        watched_composites.marked = False


def _native_sink():
    """The (binary, general) entry points of the one op listener's ring, or None."""
    takers = [lst for lst in instrument.listeners() if hasattr(lst, "on_op")]
    return getattr(takers[0], "native_op_sink", None) if len(takers) == 1 else None


instrument.on_listeners_changed(set_listening)


class _ThreadState(threading.local):
    tracer = None       # this thread's tracer (graph mode), or None
    grad = True         # this thread's grad mode


_grad_off_threads = 0   # threads with grad mode off


_thread = _ThreadState()
_tracing_lock = threading.Lock()


def set_tracer(tracer) -> object:
    """Install ``tracer`` (or None) for this thread and return the previous one.

    Tracers are per thread, so one thread can trace while another runs eagerly or traces
    another function. ``_tracing`` counts the threads that trace: while it is 0 (almost
    always) the hot path reads one module flag, as before."""
    global _tracing, _plain, _fast_with_events
    with _tracing_lock:
        previous = _thread.tracer
        _thread.tracer = tracer
        _tracing += (tracer is not None) - (previous is not None)
        _plain = not _tracing and not _listening
        _fast_with_events = _listening and not _before and not _tracing
    return previous


def current_tracer():
    """The calling thread's tracer, or None."""
    return _thread.tracer if _tracing else None


def grad_enabled() -> bool:
    """Whether autograd records in the calling thread."""
    return _grad_enabled or _thread.grad


def set_grad_enabled(on: bool) -> bool:
    """Set the calling thread's grad mode; returns the previous one."""
    global _grad_enabled, _grad_off_threads
    with _tracing_lock:
        previous = _thread.grad
        _thread.grad = bool(on)
        _grad_off_threads += int(previous) - int(bool(on))
        _grad_enabled = _grad_off_threads == 0
    return previous


# --- the general path ------------------------------------------------------------------

def apply(op, *inputs, **attrs):
    """Run ``op`` on ``inputs`` (Tensors, or Python scalars for elementwise ops)."""
    if _tracing:
        tracer = _thread.tracer
        if tracer is not None:
            return tracer.bind(op, inputs, attrs)
    return run_eager(op, inputs, attrs)


def run_eager(op, inputs, attrs):
    if _before:
        instrument.op_started(op, inputs, attrs)
    arrays = []
    array_type = None
    for x in inputs:
        if isinstance(x, Tensor):
            data = x._data
            if data.__class__ is not _ndarray and hasattr(data, "materialize"):
                data = data.materialize(x, op.name)  # a traced tensor that escaped a trace
            if array_type is None:
                array_type = data.__class__
            elif data.__class__ is not array_type:
                raise mixed_devices(op, inputs)
            arrays.append(data)
        elif x.__class__ in SCALAR_TYPES:
            arrays.append(x)
        elif isinstance(x, np.generic) and x.dtype.kind in "biufc":
            arrays.append(x.item())
        else:
            raise not_a_tensor(op, inputs, x)
    if array_type is None:  # creation ops: the device is an attribute
        device = as_device(attrs.get("device"))
        xp = xp_for(device)
        if device is not CPU and _gpu_ndarray is None:
            _enable_gpu_operators(xp, device)
    elif array_type is _ndarray:
        device, xp = CPU, np
    elif array_type is _gpu_ndarray:  # the one GPU: every CuPy array is on it
        device, xp = _gpu_device, _gpu_xp
    else:
        device = _common_device(op, inputs)
        xp = xp_for(device)
        if _gpu_ndarray is None:
            _enable_gpu_operators(xp, device)
    t0 = _perf_ns() if _listening else 0
    try:
        if device is CPU or device is _gpu_device:
            out = op.impl(xp, *arrays, **attrs)
        else:
            with xp.cuda.Device(device.index):
                out = op.impl(xp, *arrays, **attrs)
    except ExecmodeError:
        raise
    except Exception as exc:
        out = _after_failure(op, inputs, attrs, exc, xp, arrays, device)
    if out.__class__ is not _ndarray and isinstance(out, _np_generic):
        out = np.asarray(out)
    t = _new(Tensor)
    t._data = out
    t.requires_grad = False
    if (_grad_enabled or _thread.grad) and op.vjp is not None:
        for x in inputs:
            if isinstance(x, Tensor) and x.requires_grad:
                record_grad(op, inputs, attrs, t)
                break
    if _listening and (_native_general is None
                       or not _native_general(op.name, inputs, attrs, out, t0, device)):
        emit_op(op, inputs, attrs, t, out, t0, device)
    return t


def _after_failure(op, inputs, attrs, exc, xp, arrays, device):
    """The result of an op whose impl raised ``exc``: under ``np.seterr(all="raise")`` the
    op again with NumPy's floating-point errors ignored (Inf/NaN, as the C operators and
    the kernels give them: every path alike, docs/architecture.md "Paths"); else raises
    the op's error naming operands and line."""
    if isinstance(exc, FloatingPointError):
        try:
            with np.errstate(all="ignore"):
                if device is CPU or device is _gpu_device:
                    return op.impl(xp, *arrays, **attrs)
                with xp.cuda.Device(device.index):
                    return op.impl(xp, *arrays, **attrs)
        except ExecmodeError:
            raise
        except Exception as again:
            exc = again
    raise explain_failure(op, inputs, attrs, exc) from None


def fused_path_open() -> bool:
    """Whether a fused plain path (an optimizer's in-place step) may run: nobody watches,
    or only recorders that take a fused call as one op (``records_fused_steps``): a
    debugger, a tracer or another listener sees each op."""
    return _plain or (_fast_with_events and all(
        getattr(listener, "records_fused_steps", False) for listener in instrument.listeners()))


def listener_untraced() -> bool:
    """A listener sees the ops and no trace runs: composites run their ops for it (and
    plain_arrays counts each such call: watched_composites.py)."""
    return _listening and not _tracing


def plain_arrays(*tensors, fused: bool = False, one_node: bool = False):
    """The NumPy arrays of ``tensors`` when a composite may compute on them directly,
    without apply for each of its ops: no tracer and no listener (nobody sees those ops;
    with ``fused``, :func:`fused_path_open`: the caller records its call as one op,
    emit_after), every one a Tensor on a NumPy array, and autograd would not record
    (none requires grad, or grad mode is off in this thread). Else None: the composite
    runs its ops. The composite must make the NumPy calls its ops make, so that the bits
    are the ops'. With ``one_node``, a composite that records one autograd node for the
    whole (nn/one_node.py): an input that requires grad is taken, in grad mode only."""
    arrays = []
    grad = False
    for t in tensors:
        if not isinstance(t, Tensor):
            return None
        data = t._data
        if data.__class__ is not _ndarray:
            return None
        grad = grad or t.requires_grad
        arrays.append(data)
    if grad and (_grad_enabled or _thread.grad):
        if not one_node:
            return None
    elif one_node:  # no node where autograd would record none
        return None
    if not (_plain or fused and fused_path_open()):
        if _listening and not _tracing:  # the op path for the listener: part of its cost
            count_declined(_getframe(1).f_code)
        return None
    return arrays


class _Named:
    """What _emit_op reads of an op it did not dispatch: its name."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


def emit_after(name: str, inputs: tuple, attrs: dict, t, out, t0: int, ring: bool = True):
    """Give the listeners an op that ran outside dispatch (a fused optimizer step, a
    collective) as run_eager gives its own: the recorder's ring when ``ring`` and it takes
    the op, else an OpEvent. ``out`` is the array the event describes: a view (of the
    tensor written in place) allocates nothing. Attrs that change at every call (a
    collective's wait) keep ``ring`` False: each would be a new site of the ring."""
    if ring and _native_general is not None and \
            _native_general(name, inputs, attrs, out, t0, CPU):
        return
    emit_op(_Named(name), inputs, attrs, t, out, t0, CPU)


def plain_tensor(out) -> Tensor:
    """A new Tensor on ``out``, a composite's result from :func:`plain_arrays`' arrays or
    an array of the one GPU (a NumPy scalar becomes a 0-d array, as run_eager makes it)."""
    if out.__class__ is not _ndarray and out.__class__ is not _gpu_ndarray:
        out = np.asarray(out)
    t = _new(Tensor)
    t._data = out
    t.requires_grad = False
    return t


def make_operator(op, reflected: bool = False):
    """A Tensor operator method (``__add__``, ``__radd__``) with the eager fast path inlined.

    With no tracer and no listener, CPU tensors and Python scalars go straight to the op's
    NumPy ufunc: one Python call, one ufunc call and one object creation; on a machine with
    one GPU, CuPy operands go to CuPy's ufunc the same way (``gpu_operator``). Everything
    else (several GPUs, tracing, listeners, errors) takes the general path.
    """
    ufunc = op.ufunc
    name = op.name
    scalar_types = SCALAR_TYPES

    if not reflected:
        def operator(self, other):
            if _plain or (not _tracing and not _before):
                sd = self._data
                if other.__class__ is Tensor or isinstance(other, Tensor):
                    od = other._data
                    if od.__class__ is not _ndarray:
                        if od.__class__ is _gpu_ndarray and _plain:
                            return gpu_operator(self, other, sd, od)
                        return apply(op, self, other)
                    grad = self.requires_grad or other.requires_grad
                elif other.__class__ in scalar_types:
                    od = other
                    grad = self.requires_grad
                else:
                    return apply(op, self, other)
                if sd.__class__ is not _ndarray:
                    if sd.__class__ is _gpu_ndarray and _plain:
                        return gpu_operator(self, other, sd, od)
                    return apply(op, self, other)
                t0 = _perf_ns() if _listening else 0
                try:
                    out = ufunc(sd, od)
                except Exception:
                    return apply(op, self, other)  # the general path explains it
                if out.__class__ is not _ndarray:
                    out = np.asarray(out)
                t = _new(Tensor)
                t._data = out
                t.requires_grad = False
                if grad and (_grad_enabled or _thread.grad):
                    record_grad(op, (self, other), _NO_ATTRS, t)
                if _listening and (_native_binary is None
                                   or not _native_binary(name, sd, od, out, t0)):
                    emit_operator_event(name, sd, od, out, t, t0, 2)
                return t
            return apply(op, self, other)
    else:
        def operator(self, other):
            if _plain and other.__class__ in scalar_types and self._data.__class__ is _ndarray:
                try:
                    out = ufunc(other, self._data)
                except Exception:
                    return apply(op, other, self)
                if out.__class__ is not _ndarray:
                    out = np.asarray(out)
                t = _new(Tensor)
                t._data = out
                t.requires_grad = False
                if self.requires_grad and (_grad_enabled or _thread.grad):
                    record_grad(op, (other, self), {}, t)
                return t
            return apply(op, other, self)

    gpu_ufunc = None

    def gpu_operator(self, other, sd, od):
        # The fast path for CuPy operands on a machine with one GPU (so one device): the
        # CuPy ufunc at once, as the NumPy path above calls NumPy's. No tracer and no
        # listener (_plain); operands on two kinds of device, or an error, take apply().
        nonlocal gpu_ufunc
        if sd.__class__ is not _gpu_ndarray or (
                od.__class__ is not _gpu_ndarray and od.__class__ not in scalar_types):
            return apply(op, self, other)
        if gpu_ufunc is None:
            gpu_ufunc = getattr(_gpu_xp, ufunc.__name__)
        try:
            out = gpu_ufunc(sd, od)
        except Exception:
            return apply(op, self, other)  # the general path explains it
        t = _new(Tensor)
        t._data = out
        t.requires_grad = False
        if (self.requires_grad or getattr(other, "requires_grad", False)) and (
                _grad_enabled or _thread.grad):
            record_grad(op, (self, other), _NO_ATTRS, t)
        return t

    operator.__name__ = f"__r{op.name}__" if reflected else f"__{op.name}__"
    return operator


# The unary functions made by make_unary_function, by op name: [their C version (set by
# codegen/eager_operators.py's install with the C operators) or None, the Python body the
# C version hands every other call to, the op, the impl the op was registered with]. Both
# versions are called from the function (`fn`) alone: the frames they count out to the
# user's line assume it.
UNARY_FUNCTIONS: dict = {}


def make_unary_function(op, to_tensor):
    """``em.<op>(x)`` for a unary op with the eager fast path inlined, as the operators
    have it: with no tracer and no debugger stepping, a tensor's NumPy array (or, with
    nothing listening on a machine with one GPU, its CuPy array) goes straight to the op's
    implementation, skipping ``run_eager``'s argument loop and device resolution; the
    listeners that want events after ops (the recorder, a profiler) then get the op as
    run_eager would hand it over. Anything else - a Python number (``to_tensor`` makes it
    a tensor), tracing, a debugger, errors - takes ``apply``.

    The function counts its fast calls toward ``HOT_CALLS`` as the operators do; once they
    are hot, its C version (codegen/eager_operators.py) takes the plain float calls first
    and hands the rest to the Python body."""
    records = op.vjp is not None
    name = op.name
    # A float function of a float array is its ufunc (the impl only casts ints and bools):
    # called directly, ~175 ns less than through the impl for em.exp of one element.
    float_ufunc, registered_impl = op.float_ufunc, op.impl

    def python_function(x):
        if (_plain or _fast_with_events) and (x.__class__ is Tensor or isinstance(x, Tensor)):
            data = x._data
            cls = data.__class__
            if cls is _ndarray or (cls is _gpu_ndarray and _plain):
                global _until_hot
                _until_hot -= 1
                if _until_hot == 0 and _when_hot is not None:
                    _operators_hot()
                t0 = _perf_ns() if _listening else 0
                try:  # op.impl read per call, as run_eager does (the fuzzer's rounding
                    # oracle swaps it to nudge transcendental results)
                    impl = op.impl
                    if impl is registered_impl and float_ufunc is not None \
                            and cls is _ndarray and data.dtype.kind == "f":
                        out = float_ufunc(data)
                    else:
                        out = impl(np if cls is _ndarray else _gpu_xp, data)
                except Exception:
                    return apply(op, x)  # the general path explains it
                if out.__class__ is not _ndarray and isinstance(out, _np_generic):
                    out = np.asarray(out)
                t = _new(Tensor)
                t._data = out
                t.requires_grad = False
                if records and x.requires_grad and (_grad_enabled or _thread.grad):
                    record_grad(op, (x,), _NO_ATTRS, t)
                # skip 2: past this function and fn, out to the caller's frame
                if _listening and (_native_general is None or not _native_general(
                        name, (x,), _NO_ATTRS, out, t0, CPU, 2)):
                    _emit_unary(name, data, out, t, t0, 2)
                return t
        return apply(op, to_tensor(x))

    python_function.__name__ = python_function.__qualname__ = name
    entry = UNARY_FUNCTIONS[name] = [None, python_function, op, registered_impl]

    def fn(x):
        native = entry[0]
        if native is not None:
            return native(x)
        return python_function(x)

    return fn


# The operators start as counting wrappers around make_operator's; after HOT_CALLS calls
# that C operators would take (plain, or with listeners that want events after ops only,
# as the recorder does: a script doing arithmetic in a loop) the hook replaces them for
# good: with C operators when codegen/eager_operators.py can build them, else with the
# Python ones unwrapped. The hook is set from above (api.py): a layer below codegen cannot
# import it. (Two threads racing on the count at worst install twice or never: both keep
# the answers right.)
HOT_CALLS = 4096
_until_hot = HOT_CALLS
_when_hot = None


def when_operators_hot(hook) -> None:
    """Call ``hook()`` once, the first time the Tensor operators have run HOT_CALLS times
    on their fast path (it replaces them; see counting_operator)."""
    global _when_hot
    _when_hot = hook


def counting_operator(operator):
    """``operator`` (from make_operator) counting its fast calls until they are many."""
    def counting(self, other):
        global _until_hot
        if _plain or _fast_with_events:
            _until_hot -= 1
            if _until_hot == 0 and _when_hot is not None:
                _operators_hot()
        return operator(self, other)

    counting.__name__, counting.__qualname__ = operator.__name__, operator.__qualname__
    counting.__wrapped__ = operator
    return counting


def _operators_hot() -> None:
    try:
        _when_hot()
    except Exception as exc:  # the operators as they are work: keep them and say why
        warnings.warn(f"execmode: the eager operators were not replaced ({exc!r})",
                      RuntimeWarning, stacklevel=3)


# --- autograd and instrumentation hooks ------------------------------------------------

def record_grad(op, inputs, attrs, out_tensor):
    """Give ``out_tensor`` its autograd node: the one definition, for eager ops and for
    the tracer (Tracer._bind), so traced and eager tapes are built alike. Returns the saved
    output (a tensor on the output's own buffer: an alias, as eager saves it) or None; the
    tracer adopts it as a live traced tensor."""
    saved = None
    if op.saves_output:
        saved = _new(Tensor)
        saved._data = out_tensor._data
        saved.requires_grad = False
    # A node with a complex value keeps its vjp only where the rule holds for complex
    # values (ops/complex_grad.py); any other refuses at backward rather than run a real
    # rule on complex numbers. Read from _data in a plain loop: this runs for every
    # recorded op.
    complex_value = out_tensor._data.dtype.kind == "c"
    if not complex_value:
        for x in inputs:
            if isinstance(x, Tensor) and x._data.dtype.kind == "c":
                complex_value = True
                break
    if complex_value and op.name not in COMPLEX_DIFFERENTIABLE:
        op = without_complex_gradient(op)
    out_tensor._grad_fn = GradNode(op, inputs, attrs, saved)
    out_tensor.requires_grad = True
    return saved


# emit_unary_event, or the same built in C once the C operators are installed
# (codegen/eager_operators.py: the extension's emit_unary).
_emit_unary = emit_unary_event


# On a machine with one GPU, once a CUDA op has run: CuPy's ndarray, the device and CuPy.
# Every CuPy array is then on that device, and it is always the current one: run_eager
# skips the device comparison and the cupy.cuda.Device context (two runtime calls) that
# several GPUs need, and the operators' fast path (make_operator's gpu_operator) takes
# operands of this class. None until then, and on machines with several GPUs.
_gpu_ndarray = None
_gpu_device = None
_gpu_xp = None


def _enable_gpu_operators(cp, device) -> None:
    global _gpu_ndarray, _gpu_device, _gpu_xp
    if cuda_device_count() == 1:
        _gpu_device, _gpu_xp, _gpu_ndarray = device, cp, cp.ndarray


def _common_device(op, inputs):
    device = None
    for x in inputs:
        if isinstance(x, Tensor):
            found = device_of_array(x._data)  # Device objects are interned: `is` compares
            if device is None:
                device = found
            elif found is not device:
                raise mixed_devices(op, inputs)
    return device
