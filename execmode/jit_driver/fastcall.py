"""Generated replay functions: a jitted call with almost no Python.

For a concrete function without graph breaks or guards, whose arguments are tensors passed
positionally, this writes a small Python function that checks the arguments against the
signature, runs the plan's steps as straight-line code (each step a local variable, pooled
buffers and the views taken of them bound as constants) and wraps the outputs as the
general path does (views of outputs included: a weight's gradient eager computes
transposed). Any mismatch (a new shape, a listener attached, a trace in progress, jit
disabled) returns MISS and the general path takes over, so the fast path never changes
behaviour, only cost.

The source is built from our own plan, never from user input, and kept on the function
(``fast.__source__``) for anyone who wants to read it.

When the plan is one compiled C function (a whole-graph program or a single fused C
kernel) and the extension builds, ``build_fast_call`` returns the C fast entry instead
(codegen/fast_entry.py): the same checks and results in C, with this Python replay kept
as its fallback for layouts only C checks (``entry.python``).

``EXECMODE_JIT_REPLAY`` (read once at import; jit_driver/paths.py pins it in a block)
forces the replay tier: ``general`` (``JitFunction._call`` at every call: no fast
replay), ``generated`` (this Python replay, never the C entry), ``native`` or ``auto``
(the default: the C entry where the plan qualifies and the extension builds, else the
Python replay). ``EXECMODE_FAST_ENTRY=0`` still turns the C entry off.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from .. import dispatch, instrument, kernel_clock
from .._tensor import Tensor
from ..backend import as_device, cuda_device_count, cupy_module
from ..graph import pytree
from ..graph.views import VIEW_OPS, replay
from ..plan import allocated_bytes
from ..pysource import define
from .results import JIT_RESULT, wrap_result
from .tensor_guards import ReplayNames

MISS = object()

REPLAYS = ("general", "generated", "native", "auto")


def replay_from_env() -> str:
    """``EXECMODE_JIT_REPLAY`` (one of REPLAYS; unset: auto). Another value warns."""
    text = os.environ.get("EXECMODE_JIT_REPLAY", "").strip().lower() or "auto"
    if text not in REPLAYS:
        warnings.warn(f"execmode: EXECMODE_JIT_REPLAY={text!r} is not one of "
                      f"{', '.join(REPLAYS)}; using auto", UserWarning, stacklevel=2)
        return "auto"
    return text


ENV_REPLAY = replay_from_env()
_replay = ENV_REPLAY  # the tier build_fast_call builds (paths.py changes it)


def set_replay(tier: str) -> str:
    """Build ``tier``'s replays from now on; returns the previous tier. (Functions jitted
    before keep theirs: jit_driver/paths.py rebuilds them.)"""
    global _replay
    if tier not in REPLAYS:
        raise ValueError(f"jit replay must be one of {', '.join(REPLAYS)}, got {tier!r}")
    previous, _replay = _replay, tier
    return previous


def native_replay_allowed() -> bool:
    """Whether replays built now may use the C fast entry (the tier and the switch)."""
    from ..codegen import fast_entry

    return _replay in ("native", "auto") and fast_entry.enabled()


def _wrap(array):
    t = object.__new__(Tensor)
    t._data = array
    t.requires_grad = False
    return t


def _positional_items(structure):
    """The items of ``((a0, a1, ...), {})`` when every argument is positional and is a
    tensor or a simple static value; else None (the general path handles the rest)."""
    if structure[0] != "tuple" or len(structure[1]) != 2:
        return None
    args, kwargs = structure[1]
    if args[0] != "tuple" or kwargs != ("dict", (), ()):
        return None
    for item in args[1]:
        if item != pytree.LEAF and not (item[0] == "static" and
                                        isinstance(item[1][1], int | float | str | bool)):
            return None
    return args[1]


def build_fast_call(cf, jit_module):
    """A callable ``fast(*args)`` replaying ``cf`` (or None when cf does not qualify): the
    C fast entry (codegen/fast_entry.py) when the plan is one compiled C function and the
    extension builds, else the generated Python replay; ``_replay`` may force a tier."""
    if _replay == "general":
        return None
    python = _python_replay(cf, jit_module)
    if python is None or _replay == "generated" or not cf.segments[0].compiled.plan.steps:
        return python
    from ..codegen import fast_entry

    items = _positional_items(cf.signature.structure)
    return fast_entry.make_fast_entry(
        cf, items, python, (dispatch, jit_module, instrument, pytree, Tensor, MISS)) or python


def _array_check(device, i: int, ns: dict) -> str | None:
    """The condition under which argument array ``d{i}`` is not of the traced kind: a
    NumPy array for the CPU; a CuPy array on the traced GPU (its dtype compared by value:
    CuPy's dtypes are NumPy's, but nothing promises the same objects). None: unknown
    device, the general path."""
    if str(device) == "cpu":
        return f"d{i}.__class__ is not ndarray or d{i}.dtype is not T{i}"
    cp = cupy_module()
    if cp is None or not str(device).startswith("cuda"):
        return None
    ns["cupy_ndarray"] = cp.ndarray
    check = f"d{i}.__class__ is not cupy_ndarray or d{i}.dtype != T{i}"
    if cuda_device_count() > 1:
        check += f" or d{i}.device.id != {as_device(device).index}"
    return check


def _python_replay(cf, jit_module):
    """The generated Python replay of ``cf``, or None when cf does not qualify."""
    sig = cf.signature
    items = _positional_items(sig.structure)
    if cf.has_breaks or items is None or cf.out_spec is None or any(
            isinstance(ref, tuple) for ref, _, _ in cf.flag_writes):
        return None  # a result it does not rebuild (a .grad, an input's view), or breaks
    segment = cf.segments[0]
    plan = segment.compiled.plan
    if plan.collectives:
        # This replay answers a failed step with MISS and the general path runs the plan
        # again: a collective would then run twice on this rank only (plan.program_reason).
        return None
    if plan.program is None and not plan._buffers_ready:
        plan._allocate_buffers()  # the steps below bind the pooled buffers as constants
    ns: dict = {"MISS": MISS, "Tensor": Tensor, "ndarray": np.ndarray, "_wrap": _wrap,
                "_new": object.__new__, "_dispatch": dispatch, "_instrument": instrument,
                "_jit": jit_module, "_wrap_result": wrap_result, "JIT_RESULT": JIT_RESULT}
    # Another argument count is a miss, not a TypeError: a parameter with a default may
    # be left out or given (missing ones arrive as MISS, which fails the checks below).
    args = "".join(f"a{i}=MISS, " for i in range(len(items)))
    lines = [f"def fast({args}*extra):"]
    lines.append("    if extra:")
    lines.append("        return MISS")
    lines.append("    if (_dispatch._tracing or _jit._jit_disabled or _instrument._on_kernel"
                 " or _instrument._before_kernel or _instrument._after_kernel):")
    lines.append("        return MISS")

    # Grad mode on in every thread (the module flag), or off in this one.
    lines.append("    if _dispatch._grad_enabled is not True:" if sig.grad_enabled else
                 "    if _dispatch.grad_enabled():")
    lines.append("        return MISS")
    leaf = 0
    leaf_position: dict[int, int] = {}
    for position, item in enumerate(items):
        if item != pytree.LEAF:
            # A static argument keys the cache by value (and by type: 1 is not 1.0 here).
            value = item[1][1]
            ns[f"K_{position}"], ns[f"KT_{position}"] = value, type(value)
            lines.append(f"    if a{position}.__class__ is not KT_{position} or "
                         f"a{position} != K_{position}:")
            lines.append("        return MISS")
            continue
        i = leaf
        leaf += 1
        leaf_position[i] = position
        shape, dtype, device, requires_grad, alias = sig.leaves[i]
        array_check = _array_check(device, i, ns)
        if array_check is None:
            return None
        if alias != i:
            # Traced with one tensor passed twice (``f(x, x)``): the graph has one input
            # for both, so the call qualifies when this argument is that same object.
            if plan.assigns or any(guard.needs_owners for guard in cf.guards):
                return None  # memory-ownership checks count distinct arguments
            lines.append(f"    if a{position} is not a{leaf_position[alias]}:")
            lines.append("        return MISS")
            lines.append(f"    d{i} = d{alias}")
            continue
        ns[f"S{i}"], ns[f"T{i}"] = tuple(shape), dtype
        lines.append(f"    if a{position}.__class__ is not Tensor:")
        lines.append("        return MISS")
        lines.append(f"    d{i} = a{position}._data")
        lines.append(f"    if ({array_check} or d{i}.shape != S{i} or "
                     f"a{position}.requires_grad is not {requires_grad}):")
        lines.append("        return MISS")
    needs_owners = (plan.assigns and leaf > 1) or any(
        guard.needs_owners for guard in cf.guards)
    if needs_owners:  # the arrays owning each argument's memory (a view's base)
        for i in range(leaf):
            lines.append(f"    o{i} = d{i}.base")
            lines.append(f"    o{i} = d{i} if o{i} is None else o{i}")
        lines.append(f"    owners = {{{', '.join(f'id(o{i})' for i in range(leaf))}}}")
    if plan.assigns and leaf > 1:
        # Traced with arguments in distinct memory: tensors sharing memory would need one
        # input (a tensor passed twice, w and w.detach(), x and a view of x).
        lines.append(f"    if len(owners) != {leaf}:")
        lines.append("        return MISS")

    def ref(r, name):
        if isinstance(r, tuple):
            return f"a{leaf_position[r[1]]}"
        ns[name] = r
        return name

    if cf.python_guards or cf.scalar_guards:
        ns["_python_state_holds"] = cf.python_state_holds
        lines.append("    if not _python_state_holds():")
        lines.append("        return MISS")
    # Each tensor guard's compiled form (tensor_guards.py), in the order guards_hold
    # checks them (a .grad's type after whether it is None).
    names = ReplayNames(tuple(f"a{leaf_position[i]}" for i in range(leaf)),
                        tuple(f"d{i}" for i in range(leaf)))
    for k, guard in enumerate(cf.guards):
        lines.extend(guard.replay_test(ref(guard.ref, f"GT{k}"), k, ns, names))
        lines.append("        return MISS")
    # Graph inputs: argument arrays or captured tensors read by reference.
    for k, (slot, source) in enumerate(zip(plan.input_slots, segment.sources)):
        if source.kind == "arg":
            lines.append(f"    v{slot} = d{source.leaf_index}")
        elif source.kind == "capture":
            ns[f"C{k}"] = source.tensor
            lines.append(f"    v{slot} = C{k}._data")
        elif source.kind == "scalar":  # a Python number read at every call
            lines.extend(_scalar_lines(k, slot, source, ns))
        else:  # the .grad of an argument or of a capture
            owner = ref(("arg", source.leaf_index) if source.leaf_index >= 0 else
                        source.tensor, f"C{k}")
            lines.append(f"    v{slot} = {owner}._grad._data")
    inputs = ", ".join(f"v{slot}" for slot in plan.input_slots)
    if plan.program is not None:
        # The whole graph is one C function: hand it the inputs, get the outputs (the
        # assigns are written inside it; None: an input it writes has another layout).
        ns["_program"] = plan.program
        lines.append(f"    outs = _program.run([{inputs}])")
        if plan.assigns or plan.program.failed is not None:  # (a check failed: MISS)
            lines.append("    if outs is None:")
            lines.append("        return MISS")
        for k, slot in enumerate(plan.output_slots):
            lines.append(f"    v{slot} = outs[{k}]")
        return _finish(cf, plan, lines, ns, ref, leaf_position, assigns_done=True)
    # A step that fails (an index tensor's value out of range) is a miss: the general path
    # runs the plan again, and Plan.run raises eager's error for the step that failed.
    # Nothing is written before the last step (assigns come after it), so nothing is seen
    # twice. While the kernel clock runs (a profiler, em.compare), the same steps run with
    # each one's time and new bytes added to the plan's clock, as Plan._run_timed does.
    steps = _step_lines(plan, ns)
    ns["_clock_demand"], ns["_perf"] = kernel_clock.demand, time.perf_counter_ns
    ns["_clock"], ns["_new_bytes"] = plan.clock, allocated_bytes
    lines.append("    if _clock_demand:")
    lines.append("        try:")
    lines.append("            t = start = _perf()")
    for k, (step, step_lines) in enumerate(zip(plan.steps, steps)):
        ns[f"step{k}"] = step
        lines.extend("    " + line for line in step_lines)
        lines.append("            t1 = _perf()")
        lines.append(f"            _clock.add_step({k}, t1 - t, _new_bytes(step{k}, v{step.out}))")
        lines.append("            t = _perf()")
    lines.append("            _clock.add_run(t - start)")
    lines.append("        except Exception:")
    lines.append("            return MISS")
    lines.append("    else:")
    lines.append("        try:")
    for step_lines in steps:
        lines.extend("    " + line for line in step_lines)
    if not plan.steps:
        lines.append("            pass")
    lines.append("        except Exception:")
    lines.append("            return MISS")
    return _finish(cf, plan, lines, ns, ref, leaf_position)


def _scalar_lines(k: int, slot: int, source, ns: dict) -> list:
    """The lines reading scalar input ``k`` (an optimizer's lr, a bias correction) into
    ``v{slot}``: the number as a 0-d array, the same array as the last call's while the
    number is the same nonzero number of the same class (a NaN never is; a zero is not,
    for its sign), so a kernel reading it finds its pointer bound already instead of
    binding a new array's (~1 us per kernel argument). Nothing writes a graph input that
    is not a tensor's, so the array a caller may keep never changes."""
    ns[f"C{k}"], ns[f"D{k}"], ns["_asarray"] = source.scalar.read, source.dtype, np.asarray
    ns["_plain"] = {float: float, int: int}.get  # (another type: a new array every call)
    ns[f"N{k}"] = [None, None, None]  # the array, its number's class, the number
    return [f"    n = C{k}()",
            f"    last = N{k}",
            "    if n.__class__ is not last[1] or n != last[2] or not n:",
            f"        last[0], last[1], last[2] = _asarray(n, D{k}), _plain(n.__class__), n",
            f"    v{slot} = last[0]"]


def _step_lines(plan, ns: dict) -> list:
    """Each step of ``plan`` as the replay's lines (indented for a ``try:`` block), its
    functions, buffers and literal operands bound in ``ns``."""
    out = []
    fixed: dict = {}  # slot -> the array it holds at every call (a pooled buffer, its view)
    for k, step in enumerate(plan.steps):
        operands = []
        for j, a in enumerate(step.args):
            if isinstance(a, int):
                operands.append(f"v{a}")
            else:
                ns[f"L{k}_{j}"] = a.value
                operands.append(f"L{k}_{j}")
        call = ", ".join(operands)
        view = _fixed_view(plan, step, fixed)
        if step.out_array is not None:
            fixed[step.out] = step.out_array
            ns[f"into{k}"], ns[f"buf{k}"] = step.into, step.out_array
            out.append([f"        into{k}(buf{k}{', ' if call else ''}{call})",
                        f"        v{step.out} = buf{k}"])
        elif view is not None:
            fixed[step.out] = ns[f"view{k}"] = view
            out.append([f"        v{step.out} = view{k}"])
        else:
            ns[f"fn{k}"] = step.fn
            out.append([f"        v{step.out} = fn{k}({call})"])
    return out


def _fixed_view(plan, step, fixed: dict):
    """The view ``step`` takes of arrays the replay holds at every call (``fixed``: pooled
    buffers and views of them), made once here, or None. The same object at every call,
    so the kernels reading it keep their bound pointer; taken only where nobody outside
    the plan sees it (not a graph output) and NumPy made a view (not a copy)."""
    if step.kind != "op" or step.node.op not in VIEW_OPS or step.out in plan.output_slots:
        return None
    slots = [a for a in step.args if a.__class__ is int]
    if not slots or any(a not in fixed for a in slots):
        return None
    source = fixed[slots[0]]
    try:
        view = step.fn(*(fixed[a] if a.__class__ is int else a.value for a in step.args))
    except Exception:  # noqa: BLE001 - the replay runs the step at every call instead
        return None
    if view.__class__ is not np.ndarray or _owner(view) is not _owner(source):
        return None
    return view


def _owner(array):
    base = array.base
    return array if base is None else base


def _view_expression(array: str, steps, name: str, ns: dict) -> str:
    """``array`` viewed through ``steps`` (graph/views.py) as the general replay's
    ``views.replay`` makes it: a NumPy array's transposes and reshapes by the methods the
    ops' impls call; anything else (a CuPy array, an index) through ``replay`` itself."""
    ns["_view_replay"], ns[name], ns["_ndarray"] = replay, steps, np.ndarray
    general = f"_view_replay({name}, {array})"
    if not all(step.op in ("permute_dims", "reshape") and len(step.attrs) == 1
               for step in steps):
        return general
    view = array
    for j, step in enumerate(steps):
        (_, ns[f"{name}_{j}"]), = step.attrs  # the axes or the shape
        method = "transpose" if step.op == "permute_dims" else "reshape"
        view = f"{view}.{method}({name}_{j})"
    return f"({view} if {array}.__class__ is _ndarray else {general})"


def _finish(cf, plan, lines: list, ns: dict, ref, leaf_position: dict,
            assigns_done: bool = False):
    """Assigns (unless a program wrote them), grad writes, outputs and the return
    statement; then compile it."""
    outputs = [f"v{s}" for s in plan.output_slots]
    # As Plan.run: outputs that alias an input or an earlier output are copied.
    for k in plan.copy_outputs:
        lines.append(f"    o{k} = {outputs[k]}.copy()")
        outputs[k] = f"o{k}"
    if plan.assigns and not assigns_done:
        # As Plan.apply_assigns: keep the values the writes would clobber, then write.
        values = [f"v{slot}" for _, slot in plan.assigns]
        for k in plan.copy_assigns:
            lines.append(f"    w{k} = {values[k]}.copy()")
            values[k] = f"w{k}"
        for (position, _), value in zip(plan.assigns, values):
            lines.append(f"    v{plan.input_slots[position]}[...] = {value}")
    results = []
    for k, (kind, value) in enumerate(cf.out_spec):
        if kind == "out":  # _wrap inlined: a call is a tenth of a single op's replay
            lines.append(f"    r{k} = _new(Tensor)")
            lines.append(f"    r{k}._data = {outputs[value]}")
            lines.append(f"    r{k}.requires_grad = False")
        elif kind == "out_rg":  # eager's result would require grad (results.JIT_RESULT)
            lines.append(f"    r{k} = _wrap_result({outputs[value]}, True)")
        elif kind == "out_view":  # eager's view of a graph output (a transposed gradient)
            index, steps, requires_grad = value
            view = _view_expression(outputs[index], steps, f"VS{k}", ns)
            lines.append(f"    r{k} = _wrap_result({view}, {bool(requires_grad)})")
        elif kind == "same":
            lines.append(f"    r{k} = r{value}")
        elif kind == "arg":
            lines.append(f"    r{k} = a{leaf_position[value]}")
        else:
            ns[f"K{k}"] = value
            lines.append(f"    r{k} = K{k}")
        results.append(f"r{k}")
    for k, (tensor, requires_grad, took_history) in enumerate(cf.flag_writes):
        ns[f"FW{k}"] = tensor  # a capture whose autograd flags the function sets
        lines.append(f"    FW{k}.requires_grad = {requires_grad}")
        lines.append(f"    FW{k}._grad_fn = {'JIT_RESULT' if took_history else 'None'}")
    for k, (owner, index) in enumerate(cf.grad_writes):
        value = "None" if index is None else results[index]
        lines.append(f"    {ref(owner, f'G{k}')}._grad = {value}")
    if cf.joint is not None:  # differentiable results: one shared node (backward.py)
        ns["_attach"] = cf.joint.attach
        leaves = "".join(f"a{leaf_position[i]}, " for i in range(len(leaf_position)))
        lines.append(f"    _attach([{', '.join(results)}], ({leaves}), [{', '.join(outputs)}])")
    leaves = results[:cf.n_out]
    if cf.out_structure == pytree.LEAF:
        lines.append(f"    return {leaves[0]}")
    else:
        ns["_unflatten"], ns["_structure"] = pytree.unflatten, cf.out_structure
        lines.append(f"    return _unflatten(_structure, [{', '.join(leaves)}])")
    source = "\n".join(lines) + "\n"
    define(source, f"<execmode replay {plan.graph_id}>", ns)
    fast = ns["fast"]
    fast.__source__ = source
    return fast
