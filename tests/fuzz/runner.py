"""Run a program eagerly and under ``em.jit``, each from its own fresh state.

Each mode executes the program's text in a fresh module namespace: the setup, then
``def f``, then ``F = f`` (eager) or ``F = em.jit(f, ...)``, then for every call its
statements and ``outK = F(...)``, recording an observation (observe.py) after each call.
The first call that raises ends the run (the state after a failed call is not compared:
eager has run the ops before the failure, a graph applies its writes at its end).

With the program's ``listener`` option both modes run with an instrument listener
attached; with ``threads``, two jitted instances and one eager instance of the program run
at once in three threads, each against its own namespace, and each is compared with the
sequential eager run.

Each run may pin execution paths (``pins``: jit_driver/paths.py ``pinned``'s keywords):
check.py runs one program on every eager path and every jit replay tier.
"""

from __future__ import annotations

import itertools
import linecache
import sys
import threading
from dataclasses import dataclass, field

import execmode as em
from execmode import instrument
from execmode.jit_driver import paths
from execmode.pysource import ast_lock

from .observe import CallObs, ErrorObs, error_obs, observe
from .program import Program

_ids = itertools.count()


class Listener:
    """A listener that records nothing; its presence changes the engine's execution path
    (plans run step by step with kernel events instead of one C function)."""

    def __init__(self, kind: str):
        self.kind = kind
        if kind == "all":
            self.on_op = self.before_op = self.before_kernel = self.after_kernel = self._noop

    def on_event(self, event) -> None:
        pass

    def _noop(self, *args) -> None:
        pass


@dataclass
class RunResult:
    mode: str
    calls: list = field(default_factory=list)      # CallObs
    setup_error: ErrorObs | None = None
    label: str = ""
    # The kinds of fast replay F had before its calls (its _fast's class names: "NoneType",
    # "function" for the generated replay, "FastEntry"): which replay tiers the calls met.
    fast_kinds: set = field(default_factory=set)
    # Calls that one size-generic graph served (jit_driver/symbolic_dims.py), not a trace
    # or a plan of their own size: the symbolic_sizes feature is there to reach it.
    generic_calls: int = 0


# CPython 3.11's compile() is not thread-safe (its AST recursion-depth counter is shared:
# "SystemError: AST constructor recursion depth mismatch", gh-106905): the three threads of
# a threaded program compile their source one at a time, under execmode's own lock.
_compile_lock = ast_lock


def _compile(text: str, what: str, mode: str = "exec"):
    filename = f"<fuzz {what} #{next(_ids)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    with _compile_lock:
        return compile(text, filename, mode)


def default_jit(f, program: Program):
    kwargs = {}
    if program.passes is not None:
        kwargs["passes"] = list(program.passes)
    if program.backend is not None:
        kwargs["backend"] = program.backend
    return em.jit(f, **kwargs)


def run_mode(program: Program, mode: str, jit=default_jit, barrier=None,
             pins: dict | None = None) -> RunResult:
    """Execute ``program`` once: ``mode`` is "eager" or "jit"; ``pins`` the paths forced
    meanwhile (paths.pinned's keywords; None: as they are)."""
    if pins:
        with paths.pinned(**pins):
            return run_mode(program, mode, jit, barrier)
    result = RunResult(mode)
    ns = {"__name__": f"fuzz_{mode}"}
    try:
        exec(_compile(program.prelude_text(), "prelude"), ns)  # noqa: S102 - generated code
        f = ns["f"]
        ns["F"] = f if mode == "eager" else jit(f, program)
    except Exception as exc:  # noqa: BLE001
        result.setup_error = error_obs(exc)
        if barrier is not None:
            barrier.abort()
        return result
    if barrier is not None:
        barrier.wait(timeout=60)  # the threads start their calls together
    for k, call in enumerate(program.calls, start=1):
        before = "\n".join(s.text for s in call.before)
        if before.strip():
            try:
                exec(_compile(before, f"call {k} set-up"), ns)  # noqa: S102
            except Exception as exc:  # noqa: BLE001
                obs = CallObs(k, before_error=error_obs(exc))
                result.calls.append(obs)
                return result
        exception = None
        result.fast_kinds.add(type(getattr(ns["F"], "_fast", None)).__name__)
        try:
            out = eval(_compile(f"F({', '.join(call.args)})", f"call {k}", "eval"), ns)  # noqa: S307
        except Exception as exc:  # noqa: BLE001
            exception, out = error_obs(exc), None
        ns[f"out{k}"] = out
        result.calls.append(observe(ns, k, exception))
        if exception is not None:
            break
    result.generic_calls = generic_calls(ns["F"])
    return result


def generic_calls(F) -> int:
    """How many calls of jitted ``F`` a size-generic graph served (0 for eager ``f``)."""
    sizes = getattr(F, "_sizes", None)
    if sizes is None:
        return 0
    return sum(entry.calls for entries in sizes.generic.values() for entry in entries)


def _listening(program: Program):
    if program.listener:
        return instrument.listening(Listener(program.listener))
    return _Null()


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def run_both(program: Program, jit=default_jit, pins: dict | None = None
             ) -> tuple[RunResult, list]:
    """The eager run and the jitted run(s) to compare with it (on the paths ``pins``
    forces)."""
    with _listening(program):
        eager = run_mode(program, "eager", pins=pins)
        if not program.threads:
            return eager, [run_mode(program, "jit", jit, pins=pins)]
        with paths.pinned(**(pins or {})):
            return eager, _run_threads(program, jit)


def run_on(program: Program, mode: str, pins: dict, jit=default_jit) -> RunResult:
    """One more run of ``program`` in ``mode`` on the paths ``pins`` forces (the path
    matrix: check.py compares it with the same mode on other paths)."""
    with _listening(program):
        return run_mode(program, mode, jit, pins=pins)


def _run_threads(program: Program, jit) -> list:
    modes = ("jit", "jit", "eager")
    results: list = [None] * len(modes)
    barrier = threading.Barrier(len(modes))

    def work(i, mode):
        try:
            results[i] = run_mode(program, mode, jit, barrier)
        except Exception as exc:  # noqa: BLE001
            results[i] = RunResult(mode, setup_error=error_obs(exc))
        results[i].label = f"thread {i + 1} ({mode})"

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=work, args=(i, m), daemon=True)
                   for i, m in enumerate(modes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(old)
    for i, r in enumerate(results):
        if r is None:
            results[i] = RunResult(modes[i], setup_error=ErrorObs("Timeout", "thread hung", ""),
                                   label=f"thread {i + 1} ({modes[i]})")
    return results
