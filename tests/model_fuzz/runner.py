"""Run a fuzz model eagerly and under ``em.jit``, observing the state after every step.

* ``run(spec, backend)``: one run in a fresh namespace (``backend`` None: eager; "numpy":
  jit with every graph node run through NumPy exactly as its eager op, and every pass but
  memory planning (EXACT_PASSES); "c": jit as users get it).
  The first step that raises ends it (its exception is the last observation).
* ``run_lockstep(spec, compare_step)``: an eager run, a second eager run whose floats are
  moved by 2 ulps before each step and whose transcendental and summing ops round a few
  ulps off (tests/fuzz/rounding.py's nudges), and the runs under jit, step by step. After
  each step all are observed, then every float state tensor of the others (parameters,
  gradients, buffers, optimizer state) gets the eager run's values, in place: the next step
  starts them from the same numbers, so a comparison measures one step's rounding, not the
  chaos of a training trajectory, and the perturbed run says how much rounding this step of
  this model amplifies. Each run keeps its own random stream (dropout draws as eagerly).
"""

from __future__ import annotations

import itertools
import linecache
import warnings
from functools import partial

import numpy as np

import execmode as em
from execmode.ops import rng
from execmode.pysource import ast_lock

from .observe import Observer

_ids = itertools.count()


def _compile(text: str, what: str):
    filename = f"<model fuzz {what} #{next(_ids)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    with ast_lock:
        return compile(text, filename, "exec")


# The exact run: the passes that keep every value's memory layout. Two passes change
# layouts, which graphs may (docs/graph-mode.md: values within rounding): memory planning
# writes results into C-ordered pooled buffers where NumPy keeps an intermediate
# transposed (K order), and simplify's turned product computes (A @ B)^T as a C-ordered
# B^T @ A^T where eager holds a transposed view; a later sum over either adds in memory
# order, so to the last bit it differs (model fuzzer, 1-10 and 2-57). The kernels run
# checks them, with every pass, within rounding.
EXACT_PASSES = ["fold_constants", "eliminate_common_subexpressions", "eliminate_dead_code",
                "fuse"]


def _jit(backend):
    """What ``JIT`` is in a run's namespace: the identity (eager), em.jit for a backend,
    or ``backend`` itself when it is callable (the fuzzer's tests plant bugs that way)."""
    if backend is None:
        return lambda f: f
    if callable(backend):
        return backend
    if backend == "numpy":
        return partial(em.jit, backend="numpy", passes=EXACT_PASSES)
    return partial(em.jit, backend=None if backend == "c" else backend)


class Run:
    """One namespace: its setup ran; ``step(k)`` runs step k and returns its observation."""

    def __init__(self, spec, backend):
        self.spec, self.backend = spec, backend
        name = getattr(backend, "__name__", backend) or "eager"
        self.ns = {"__name__": f"model_fuzz_{name}", "JIT": _jit(backend)}
        self.observer = Observer()
        self.failed = False
        self._rng_state = None
        self._pending = None         # an exception the events before a step raised
        self.setup_error = None
        try:
            self._in_own_stream(lambda: exec(_compile(spec.setup_text(), "setup"), self.ns))  # noqa: S102
        except Exception as exc:  # noqa: BLE001
            self.setup_error = exc
            self.failed = True

    def _in_own_stream(self, action):
        """Run ``action`` with this run's random state (two runs interleave in lockstep)."""
        gen = rng.generator()
        if self._rng_state is not None:
            gen.bit_generator.state = self._rng_state
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")  # NaN/Inf on purpose; jit's own notes
                return action()
        finally:
            self._rng_state = rng.generator().bit_generator.state

    def step(self, k: int) -> dict:
        """Run step k whole (its events, then the step); its observation."""
        self.events(k)
        return self.act(k)

    def events(self, k: int) -> dict | None:
        """Run what happens before step k; the state the step starts from (None if the
        events raised: the step's observation says so)."""
        lines = self.spec.event_lines(self.spec.steps[k - 1])
        self._pending = None
        try:
            self._exec(lines, f"events before step {k}")
        except Exception as exc:  # noqa: BLE001
            self._pending = exc
            return None
        return self.observer.observe(self.ns, k - 1, quiet=True)

    def act(self, k: int) -> dict:
        """Run step k itself (after ``events``); its observation."""
        error = self._pending
        if error is None:
            try:
                self._exec(self.spec.action_lines(k, self.spec.steps[k - 1]), f"step {k}")
            except Exception as exc:  # noqa: BLE001
                error = exc
        if error is not None:
            self.failed = True
            return self.observer.observe(self.ns, k, error)
        return self.observer.observe(self.ns, k)

    def _exec(self, lines: list, what: str) -> None:
        if lines:
            code = _compile("\n".join(lines) + "\n", what)
            self._in_own_stream(lambda: exec(code, self.ns))  # noqa: S102


def run(spec, backend=None) -> tuple[list, BaseException | None]:
    """(observations after each step, the setup's exception or None)."""
    r = Run(spec, backend)
    out = []
    for k in range(1, len(spec.steps) + 1):
        if r.failed:
            break
        out.append(r.step(k))
    return out, r.setup_error


def run_lockstep(spec, compare_step, backends=("numpy", "c")) -> list:
    """An eager run, a perturbed eager run and a run under jit per backend, step by step.
    ``compare_step(k, eager_before, eager_obs, jit_obs, sensitivity, run_name)`` returns
    the step's mismatches (``eager_before``: the eager state as the step began, after the
    events between steps, or None), where ``sensitivity`` maps each float path to how far the perturbed run
    moved from the eager one in this step (perturb). After each step the perturbed and
    jitted runs take the eager run's floats (resync), then the perturbed run's floats move
    by 2 ulps (random signs) for the next step."""
    # fuzz/ as pytest sees it (python -m tests.model_fuzz puts tests/ on the path first)
    from fuzz.rounding import transcendentals_nudged  # noqa: PLC0415

    eager, moved = Run(spec, None), Run(spec, None)
    jitted = {b: Run(spec, b) for b in backends}
    if eager.setup_error is not None or any(r.setup_error is not None
                                            for r in jitted.values()):
        return [("setup", type(eager.setup_error).__name__,
                 {b: type(r.setup_error).__name__ for b, r in jitted.items()})]
    generator = np.random.default_rng(_seed_number(spec.seed))
    perturb(moved, generator)
    mismatches = []
    for k in range(1, len(spec.steps) + 1):
        before = eager.events(k)
        for run_ in (moved, *jitted.values()):
            run_.events(k)
        e = eager.act(k)
        # The perturbed run's transcendentals and sums round a few ulps off too, as the
        # kernels' approximations and summation orders do: what a step makes of rounding
        # inside it, not only of its starting state (model 20261264-31: softplus, one ulp
        # off, then a batch norm of two nearly equal rows).
        with transcendentals_nudged(np.inf if k % 2 else -np.inf):
            m = moved.act(k)
        sensitivity = _distances(e, m)
        for backend, run_ in jitted.items():
            name = getattr(backend, "__name__", backend)
            found = compare_step(k, before, e, run_.act(k), sensitivity, f"jit {name}")
            mismatches += found
        if mismatches or eager.failed or any(r.failed for r in jitted.values()):
            break
        for run_ in (moved, *jitted.values()):
            resync(eager, run_)
        perturb(moved, generator)
    return mismatches


def perturb(r: Run, generator, ulps: float = 2.0) -> None:
    """Move every float state value of ``r`` by ``ulps`` units in the last place, up or
    down at random: rounding-sized changes, to see what this model's step makes of them."""
    for t in r.observer.tensors(r.ns).values():
        a = t._data
        if a.dtype.kind == "f" and a.size:
            signs = generator.choice(np.array([-1.0, 1.0], a.dtype), a.shape)
            with np.errstate(all="ignore"):
                np.copyto(a, a * (1 + signs * ulps * np.finfo(a.dtype).eps).astype(a.dtype))


def _distances(e: dict, m: dict) -> dict:
    """path -> the largest |perturbed - eager| over the finite elements of a float value."""
    out = {}
    for path, ev in e.items():
        mv = m.get(path)
        if getattr(ev, "dtype", None) is None or ev.dtype.kind != "f" or \
                getattr(mv, "shape", None) != ev.shape:
            continue
        both = np.isfinite(ev.array) & np.isfinite(mv.array)
        with np.errstate(all="ignore"):
            diff = np.abs(ev.array.astype(np.float64) - mv.array.astype(np.float64))[both]
        out[path] = float(diff.max()) if diff.size else 0.0
    return out


def _seed_number(seed) -> int:
    return sum(ord(c) * 31 ** i for i, c in enumerate(str(seed))) % (2 ** 32)


def resync(eager: Run, other: Run) -> None:
    """Copy the eager run's float state into the other run's tensors, in place."""
    mine = other.observer.tensors(other.ns)
    for path, t in eager.observer.tensors(eager.ns).items():
        target = mine.get(path)
        if target is not None and target._data.shape == t._data.shape and \
                target.dtype == t.dtype and t.dtype.kind == "f":
            np.copyto(target._data, t._data)


__all__ = ["EXACT_PASSES", "Run", "perturb", "resync", "run", "run_lockstep"]
