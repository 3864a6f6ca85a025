"""Which cached libraries execmode may load: owner and mode checks, and content hashes.

Loading a library runs its code (constructors run at ``dlopen``), so a file in the cache
is as trusted as the people who can write it. Two rules, as ssh and pip apply to theirs:

* **Directories.** The cache directory and its folder must be owned by the current user
  and writable by nobody else (mode no wider than 0755). Otherwise anyone who can write
  there could plant a library that runs as this user (as root, in the issue that asked for
  this). ``check_directory`` raises :class:`UnsafeCacheError` naming the path and the fix;
  nothing is compiled or loaded from such a directory.
* **Files.** Every library is installed with mode 0644 together with a manifest
  ``<library>.sha256`` (``sha256sum`` format, written atomically) holding its content hash.
  Before a load, the library and its manifest must be regular files owned by the user,
  writable by nobody else, and the library's bytes must hash to the manifest's value. A
  library that fails (truncated by a full disk or a killed copy, modified, planted, or
  left by a version of execmode without manifests) is never loaded: it is rebuilt and
  replaced. A truncated library would otherwise crash the process with SIGBUS when the
  loader touches a page past its end.

What this cannot catch: the same user rewriting a library in place while a process has it
mapped. Only that user can, and execmode itself never does (it always renames new files
into place, and a mapping keeps the old file).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat

from execmode.errors import ExecmodeError

LIBRARY_MODE = 0o644
_MANIFEST_SUFFIX = ".sha256"
_MANIFEST_MAX_BYTES = 4096
_MANIFEST_LINE = re.compile(r"([0-9a-f]{64})  ([^/\n]+)\n")


class UnsafeCacheError(ExecmodeError, RuntimeError):
    """A cache directory that someone other than the current user could write. Not an
    OSError on purpose: the kernel factory falls back to the interpreter on OSError, and
    this is a setup the user must fix, not a compile failure to hide."""


class CacheWarning(UserWarning):
    """A cached library failed a check and was rebuilt. A UserWarning, not a
    RuntimeWarning: execmode silences RuntimeWarnings raised inside its own modules (NumPy's
    Inf/NaN warnings), and this one must be seen."""


def check_directory(path: str) -> None:
    """Raise UnsafeCacheError unless ``path`` is a directory owned by this user and not
    writable by group or others."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise UnsafeCacheError(f"execmode kernel cache {path}: cannot be read ({exc}); "
                               f"{_FIX}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeCacheError(f"execmode kernel cache {path} is not a directory; {_FIX}")
    problem = _ownership_problem(info, os.geteuid())
    if problem:
        fix = (f"run `chown {os.geteuid()} {path}` as its owner or root" if "owned" in problem
               else f"run `chmod go-w {path}`")
        raise UnsafeCacheError(
            f"refusing the execmode kernel cache {path}: it is {problem}, so another user "
            f"could plant code that execmode would load and run. Fix: {fix}, or {_FIX}")


_FIX = ("set EXECMODE_CACHE_DIR to a directory that only you own and can write "
        "(e.g. `mkdir -m 700 ~/.execmode-cache`)")


def _ownership_problem(info: os.stat_result, uid: int) -> str:
    if info.st_uid != uid:
        return f"owned by uid {info.st_uid}, not by you (uid {uid})"
    mode = stat.S_IMODE(info.st_mode)
    who = [name for bit, name in ((stat.S_IWGRP, "group"), (stat.S_IWOTH, "others"))
           if mode & bit]
    if who:
        return f"writable by {' and '.join(who)} (mode {mode:04o})"
    return ""


def manifest_path(library: str) -> str:
    return library + _MANIFEST_SUFFIX


def verify(library: str) -> str:
    """"" when ``library`` may be loaded, else why not ("missing" when there is none)."""
    uid = os.geteuid()
    try:
        recorded = _read_manifest(library, uid)
        actual = _hash_file(library, uid, expect_mode=True)
    except FileNotFoundError:
        return "missing"
    except _Untrusted as exc:
        return str(exc)
    except OSError as exc:  # a symlink (ELOOP), no permission, an I/O error
        return f"it cannot be read safely ({exc})"
    if actual != recorded:
        return "its content does not match the hash in its manifest (truncated or modified)"
    return ""


def file_digest(path: str) -> str:
    """The SHA-256 of a file this user owns and nobody else can write (what a manifest
    records)."""
    return _hash_file(path, os.geteuid(), expect_mode=False)


def manifest_text(library: str, digest: str) -> str:
    return f"{digest}  {os.path.basename(library)}\n"


class _Untrusted(Exception):
    pass


def _read_manifest(library: str, uid: int) -> str:
    path = manifest_path(library)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        _check_file(os.fstat(fd), uid, path, expect_mode=False)
        data = os.read(fd, _MANIFEST_MAX_BYTES + 1)
    finally:
        os.close(fd)
    match = _MANIFEST_LINE.fullmatch(data.decode("ascii", "replace"))
    if match is None or match.group(2) != os.path.basename(library):
        raise _Untrusted(f"its manifest {path} is malformed")
    return match.group(1)


def _hash_file(path: str, uid: int, expect_mode: bool) -> str:
    # O_NOFOLLOW: a symlink in the cache is not ours (we only ever rename regular files in).
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        _check_file(os.fstat(fd), uid, path, expect_mode)
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _check_file(info: os.stat_result, uid: int, path: str, expect_mode: bool) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise _Untrusted(f"{path} is not a regular file")
    problem = _ownership_problem(info, uid)
    if problem:
        raise _Untrusted(f"{path} is {problem}")
    if expect_mode and stat.S_IMODE(info.st_mode) & ~LIBRARY_MODE:
        raise _Untrusted(f"{path} has mode {stat.S_IMODE(info.st_mode):04o}, wider than "
                         f"{LIBRARY_MODE:04o}")
