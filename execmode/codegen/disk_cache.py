"""The on-disk cache of compiled kernel libraries.

One shared library per graph (all of its kernels in one translation unit), named by a hash
of its source and of everything else the machine code depends on: compiler, version,
flags and CPU. The directory is ``EXECMODE_CACHE_DIR`` when set, else the user cache
directory (``platformdirs``), subfolder ``kernels`` (``extensions`` for the compiled
fast-entry module, fast_entry.py, which is cached the same way).

Two processes may compile the same library at once: each writes its own temporary file in
the cache directory and renames it into place. ``os.replace`` is atomic, both results are
identical, and a process that already loaded the old file keeps its mapping.

Nothing is loaded from the cache unchecked (cache_trust.py): the directories must be the
user's own and writable by nobody else, and each library must match the content hash
recorded in its manifest when it was built, else it is rebuilt (``reuse_or_build``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import warnings

from . import cache_trust


def cache_dir(folder: str = "kernels") -> str:
    """The cache directory's ``folder``: "kernels" (kernel libraries) or "extensions" (the
    fast-entry extension module, fast_entry.py: kept apart so that the kernels folder
    holds kernel libraries only). Created private (0700) when missing; raises
    cache_trust.UnsafeCacheError when another user could write it."""
    override = os.environ.get("EXECMODE_CACHE_DIR", "").strip()
    if override:
        root = os.path.abspath(os.path.expanduser(override))
    else:
        import platformdirs

        root = platformdirs.user_cache_dir("execmode")
    path = os.path.join(root, folder)
    for directory in (root, path):
        _make_private(directory)
        cache_trust.check_directory(directory)
    return path


def _make_private(directory: str) -> None:
    # os.makedirs(mode=...) applies the mode to the last folder only, and the umask still
    # narrows it: with umask 002 a plain makedirs makes a group-writable cache, which the
    # trust check would then refuse.
    if os.path.isdir(directory):
        return
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        return  # another process made it first; check_directory judges it
    os.chmod(directory, 0o700)


def reuse_or_build(library: str, build) -> bool:
    """Make sure ``library`` holds a trusted build: True when the cached one passes the
    checks, else ``build(path)`` writes a new one to a temporary path (raising on failure),
    which is installed with its manifest, and False is returned."""
    problem = cache_trust.verify(library)
    if problem:
        # Another process may be between writing the manifest and renaming its library:
        # wait for its install to finish, then judge again.
        with _install_lock(library):
            problem = cache_trust.verify(library)
    if not problem:
        return True
    if problem != "missing":
        warnings.warn(f"execmode: not loading the cached library {library}: {problem}; "
                      "rebuilding it", cache_trust.CacheWarning, stacklevel=3)
    built = temporary_path(library)
    try:
        build(built)
        with _install_lock(library):
            install(built, library)
    except BaseException:
        _remove_quietly(built)
        raise
    return False


@contextlib.contextmanager
def _install_lock(library: str):
    """An exclusive lock over installs into ``library``'s folder (manifest + rename as one
    step, so a reader never pairs one build's manifest with another build's bytes: two
    builds of one source differ in the temporary file names compiled into them)."""
    path = os.path.join(os.path.dirname(library), ".install.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def install(built: str, library: str) -> None:
    """Move the freshly built file ``built`` into the cache as ``library`` with mode 0644
    and its manifest. The manifest goes first, so a reader that sees the new library also
    sees its hash; a reader that sees the new manifest with the old library finds a
    mismatch and rebuilds (identical bytes, so nothing is lost but time)."""
    os.chmod(built, cache_trust.LIBRARY_MODE)
    digest = cache_trust.file_digest(built)
    write_atomically(cache_trust.manifest_path(library),
                     cache_trust.manifest_text(library, digest))
    os.replace(built, library)


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
