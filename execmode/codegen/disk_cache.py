"""The on-disk cache of compiled kernel libraries.

One shared library per graph (all of its kernels in one translation unit), named by a hash
of its source and of everything else the machine code depends on: compiler, version,
flags and CPU. The directory is ``EXECMODE_CACHE_DIR`` when set, else the user cache
directory (``platformdirs``), subfolder ``kernels`` (``extensions`` for the compiled
fast-entry module, fast_entry.py, which is cached the same way).

Two processes may compile the same library at once: each writes its own temporary file in
the cache directory and renames it into place. ``os.replace`` is atomic, both results are
identical, and a process that already loaded the old file keeps its mapping.
"""

from __future__ import annotations

import hashlib
import os
import tempfile


def cache_dir(folder: str = "kernels") -> str:
    """The cache directory's ``folder``: "kernels" (kernel libraries) or "extensions" (the
    fast-entry extension module, fast_entry.py: kept apart so that the kernels folder
    holds kernel libraries only)."""
    override = os.environ.get("EXECMODE_CACHE_DIR", "").strip()
    if override:
        path = os.path.join(os.path.abspath(override), folder)
    else:
        import platformdirs

        path = os.path.join(platformdirs.user_cache_dir("execmode"), folder)
    os.makedirs(path, exist_ok=True)
    return path


def library_key(source: str, identity: str) -> str:
    digest = hashlib.sha256()
    digest.update(source.encode())
    digest.update(b"\0")
    digest.update(identity.encode())
    return digest.hexdigest()[:32]


def library_path(key: str, suffix: str = ".so", folder: str = "kernels") -> str:
    return os.path.join(cache_dir(folder), key + suffix)


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise


def temporary_path(final_path: str) -> str:
    """A fresh path next to ``final_path`` (same filesystem, so a rename is atomic)."""
    directory = os.path.dirname(final_path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(final_path))
    os.close(fd)
    return tmp


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
