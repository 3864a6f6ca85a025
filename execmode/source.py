"""Finding the user's source line: the first stack frame outside the execmode package."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

# Frames whose file lies under this folder are execmode's own. tui/ and profilers/ are
# installed inside execmode/ too, but in a development checkout they sit beside it.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_DIR = os.path.dirname(_PACKAGE_DIR)
_INTERNAL_PREFIXES = (
    _PACKAGE_DIR + os.sep,
    os.path.join(_REPO_DIR, "tui") + os.sep,
    os.path.join(_REPO_DIR, "profilers") + os.sep,
)
# contextlib frames sit between a user's ``with`` and execmode's context managers.
_SKIP_FILES = {"<frozen runpy>", "<string>"}


@dataclass(frozen=True, slots=True)
class SourceLocation:
    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"

    @property
    def short(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"

    def to_json(self) -> dict:
        return {"filename": self.filename, "lineno": self.lineno, "function": self.function}


_internal_cache: dict[str, bool] = {}


def is_internal_file(filename: str) -> bool:
    hit = _internal_cache.get(filename)
    if hit is None:
        hit = filename.startswith(_INTERNAL_PREFIXES) or filename in _SKIP_FILES
        _internal_cache[filename] = hit
    return hit


def user_frame(start=None):
    """The innermost frame that belongs to the user's code, or None."""
    f = start if start is not None else sys._getframe(1)
    cache = _internal_cache
    while f is not None:
        name = f.f_code.co_filename
        hit = cache.get(name)
        if hit is None:
            hit = is_internal_file(name)
        if not hit:
            return f
        f = f.f_back
    return None


# (id(code), instruction offset) -> (code, SourceLocation). Keying on the offset avoids
# f_lineno (a line-table scan) and on id() avoids hashing the code object; holding the code
# keeps its id from being reused while the entry lives.
_locations: dict = {}


def location_of(frame) -> SourceLocation:
    """The SourceLocation of a frame's current line (interned: one object per line)."""
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    entry = _locations.get(key)
    if entry is None:
        if len(_locations) > 100_000:  # bound the cache on generated code
            _locations.clear()
        loc = SourceLocation(code.co_filename, frame.f_lineno,
                             getattr(code, "co_qualname", code.co_name))
        entry = _locations[key] = (code, loc)
    return entry[1]


# id(code) -> code, for code objects found to be execmode's own: a traced op walks past
# several of them per call, and one lookup by id is cheaper than the (code, offset) key
# and the filename test. Holding the code keeps its id from being reused.
_internal_codes: dict = {}


def user_location(start=None) -> SourceLocation | None:
    """Where the user's code is now: the innermost frame outside execmode."""
    f = start if start is not None else sys._getframe(1)
    internal = _internal_codes
    while f is not None:
        code = f.f_code
        if id(code) in internal:
            f = f.f_back
            continue
        # Only user frames are interned, so a hit is a user frame: one lookup, usually.
        entry = _locations.get((id(code), f.f_lasti))
        if entry is not None:
            return entry[1]
        if not is_internal_file(code.co_filename):
            return location_of(f)
        if len(internal) > 100_000:  # bound it on generated code
            internal.clear()
        internal[id(code)] = code
        f = f.f_back
    return None


def user_stack(limit: int = 50) -> list[SourceLocation]:
    """The user's frames, innermost first (execmode frames left out)."""
    out = []
    f = sys._getframe(1)
    while f is not None and len(out) < limit:
        if not is_internal_file(f.f_code.co_filename):
            out.append(location_of(f))
        f = f.f_back
    return out
