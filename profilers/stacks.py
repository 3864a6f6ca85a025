"""Sorting py-spy samples into where the time went.

Each sample is a stack of frames, root first, spelled as py-spy spells them:
``function (/abs/file.py:12)`` for Python frames, ``function (libfoo.so)`` for native ones.
A sample's category is decided by the innermost frame that is either the user's code or
execmode's: library and native frames below it (NumPy's C code, BLAS) count for whoever
called them.

======== ============================================================================
user      the script's own Python (and the libraries it calls directly)
execmode  dispatch, autograd bookkeeping, instrumentation, the profiler itself
tracing   graph tracing and the optimization passes (execmode/graph, execmode/passes)
compiling generating and compiling kernels (execmode/codegen render/compile/cache)
kernels   running the math: eager op implementations (execmode/ops), the plan
          executor and the compiled kernels and libraries they call
other     interpreter start-up, imports, threads waiting (the session writer between
          batches), anything outside both
======== ============================================================================
"""

from __future__ import annotations

import os
import re
import site
import sys
import sysconfig

from execmode import source

CATEGORIES = {
    "user": "user code",
    "execmode": "execmode dispatch + instrumentation",
    "tracing": "tracing and passes",
    "compiling": "compiling kernels",
    "kernels": "kernel / library execution",
    "other": "other (start-up, imports, idle threads, interpreter)",
}

_FRAME = re.compile(r"^(?P<name>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
# execmode/codegen files that generate code, and function names that compile or load it;
# the rest of codegen (runtimes, the IR interpreter, buffers) runs kernels.
_COMPILING_FILES = {"render_c", "render_cuda", "toolchain", "disk_cache", "lower",
                    "kernel_ir", "layout", "factory", "matmul_policy", "status"}
_COMPILE_WORDS = ("compile", "build", "render", "lower", "load", "probe")
_KERNEL_FILES = {"plan.py", "ops"}
_GENERATED_REPLAY = "<execmode replay"  # jit_driver/fastcall.py's generated plan runners


def parse_frame(frame: str) -> tuple[str, str, int | None]:
    """("function", "file", line or None) from py-spy's spelling of a frame."""
    match = _FRAME.match(frame)
    if match is None:
        return frame, "", None
    line = match.group("line")
    return match.group("name"), match.group("file"), int(line) if line else None


class Classifier:
    """Decides the category of stacks; caches the verdict per distinct frame."""

    def __init__(self) -> None:
        package = os.path.dirname(os.path.abspath(source.__file__))
        repo = os.path.dirname(package)
        self._package = package + os.sep
        self._tool_dirs = (os.path.join(repo, "profilers") + os.sep,
                           os.path.join(repo, "tui") + os.sep)
        self._library_dirs = _library_dirs()
        self._cache: dict[str, str] = {}

    def category(self, frames: list[str]) -> str:
        """The category of one sample (frames root first)."""
        areas = [self.frame_area(f) for f in frames]
        if "import" in areas or (frames and _is_waiting(frames[-1])):
            return "other"
        for area in reversed(areas):
            if area in ("library", "native"):
                continue
            return area
        return "other"

    def frame_area(self, frame: str) -> str:
        area = self._cache.get(frame)
        if area is None:
            area = self._cache[frame] = self._area(*parse_frame(frame))
        return area

    def _area(self, name: str, file: str, line: int | None) -> str:
        if "importlib" in file and file.startswith("<frozen"):
            return "import"
        if line is None:
            return "native"
        if file.startswith(_GENERATED_REPLAY):
            return "kernels"
        if file.startswith("<"):
            return "library"
        path = os.path.abspath(file)
        if path.startswith(self._tool_dirs):
            return "execmode"
        if path.startswith(self._package):
            return _execmode_area(path[len(self._package):], name)
        if path.startswith(self._library_dirs):
            return "library"
        return "user"


def _is_waiting(frame: str) -> bool:
    # py-spy's --nonblocking mode cannot tell idle threads: a thread parked in
    # threading's wait functions (the session writer between batches) is idle.
    name, file, _ = parse_frame(frame)
    return file.endswith(f"{os.sep}threading.py") and "wait" in name


def _execmode_area(relative: str, function: str) -> str:
    parts = relative.split(os.sep)
    top = parts[0]
    if top == "codegen":
        stem = os.path.splitext(parts[-1])[0]
        lowered = function.lower()
        if stem in _COMPILING_FILES or any(w in lowered for w in _COMPILE_WORDS):
            return "compiling"
        return "kernels"
    if top in _KERNEL_FILES or relative == os.path.join("jit_driver", "fastcall.py"):
        return "kernels"
    if top in ("graph", "passes", "jit_driver"):  # the driver's own time: tracing, guards
        return "tracing"
    return "execmode"


def _library_dirs() -> tuple[str, ...]:
    """Folders of the standard library and installed packages: neither user nor execmode."""
    paths = [sysconfig.get_paths().get(key) for key in
             ("stdlib", "platstdlib", "purelib", "platlib")]
    paths += getattr(site, "getsitepackages", list)()
    paths.append(site.getusersitepackages())
    paths += [os.path.join(prefix, "lib") for prefix in {sys.prefix, sys.base_prefix}]
    return tuple(sorted({os.path.abspath(p) + os.sep for p in paths if p}))
