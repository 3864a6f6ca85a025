"""The kernel cache never loads a library someone else could have written, nor a damaged one.

Real compiles in child processes; the libraries planted here are real shared objects whose
constructor leaves a marker file, so "was it loaded?" is a file on disk, not a guess.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess

import numpy as np
import pytest
from fault_helpers import c_compiler, run_python

# Slow tier: faults injected into real processes.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(c_compiler() is None, reason="needs a C compiler")]

SCRIPT = """
import json, os
import numpy as np
import execmode as em
os.umask(int(os.environ.get("UMASK", "0o022"), 8))
f = em.jit(lambda x: em.tanh(x * 2.0) + em.exp(x) * 0.5)
y = f(em.tensor(np.arange(6, dtype=np.float32)))
y = f(em.tensor(np.arange(6, dtype=np.float32)))   # a replay: the fast entry is built
print(json.dumps(y.numpy().tolist()))
"""


def expected():
    x = np.arange(6, dtype=np.float32)
    return np.tanh(x * np.float32(2)) + np.exp(x) * np.float32(0.5)


def run_jit(cache, **env):
    return run_python(SCRIPT, EXECMODE_CACHE_DIR=cache, **env)


def assert_ran(proc):
    assert proc.returncode == 0, proc.stderr
    values = json.loads(proc.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(values, expected(), rtol=1e-5)


def libraries(cache, folder="kernels"):
    path = os.path.join(cache, folder)
    return [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".so")]


def plant_library(path: str, marker: str) -> None:
    """Compile a library whose constructor creates ``marker`` (runs at dlopen) to ``path``."""
    source = path + ".planted.c"
    with open(source, "w") as f:
        f.write('#include <fcntl.h>\n#include <unistd.h>\n'
                '__attribute__((constructor)) static void planted(void) {\n'
                f'    int fd = open("{marker}", O_WRONLY | O_CREAT, 0644);\n'
                '    if (fd >= 0) close(fd);\n}\n')
    subprocess.run([c_compiler(), "-shared", "-fPIC", "-o", path, source], check=True)
    os.unlink(source)


@pytest.fixture
def warm_cache(tmp_path):
    """A cache directory holding one kernel library and the fast-entry extension (and,
    where NumPy's OpenBLAS takes execmode's threads, the blas_workers library)."""
    cache = str(tmp_path / "cache")
    assert_ran(run_jit(cache))
    assert len(libraries(cache)) == 1 and fast_entry_library(cache)
    return cache


def fast_entry_library(cache) -> str:
    (library,) = [p for p in libraries(cache, "extensions")
                  if os.path.basename(p).startswith("fast_entry-")]
    return library


# --- directories ------------------------------------------------------------------------


@pytest.mark.parametrize("mode,word", [(0o777, "group and others"), (0o757, "others"),
                                       (0o775, "group")])
def test_a_writable_cache_directory_is_refused(tmp_path, mode, word):
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    os.chmod(cache, mode)
    proc = run_jit(str(cache))
    assert proc.returncode == 1
    message = proc.stderr.strip().splitlines()[-1]
    assert "UnsafeCacheError" in message and str(cache) in message
    assert f"writable by {word}" in message and f"chmod go-w {cache}" in message
    assert os.listdir(cache) == []  # nothing compiled, nothing loaded


def test_a_writable_kernels_folder_is_refused(warm_cache):
    folder = os.path.join(warm_cache, "kernels")
    os.chmod(folder, 0o777)
    proc = run_jit(warm_cache)
    assert proc.returncode == 1
    assert f"refusing the execmode kernel cache {folder}" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_a_cache_directory_owned_by_another_user_is_refused(tmp_path):
    marker = tmp_path / "planted-ran"
    cache = tmp_path / "their-cache"
    (cache / "kernels").mkdir(parents=True)
    for directory in (cache, cache / "kernels"):
        os.chmod(directory, 0o755)
        os.chown(directory, 65534, 65534)  # nobody: a directory we do not own
    # Whatever they planted there (even with a matching manifest) must not run.
    probe = run_jit(str(tmp_path / "probe-cache"))
    assert_ran(probe)
    name = os.path.basename(libraries(str(tmp_path / "probe-cache"))[0])
    plant_library(str(cache / "kernels" / name), str(marker))
    proc = run_jit(str(cache))
    assert proc.returncode == 1
    assert f"{cache}: it is owned by uid 65534, not by you (uid 0)" in proc.stderr
    assert f"chown 0 {cache}" in proc.stderr
    assert not marker.exists()


def test_a_missing_cache_directory_is_created_private_whatever_the_umask(tmp_path):
    cache = tmp_path / "new" / "cache"
    assert_ran(run_jit(str(cache), UMASK="0o002"))
    for directory in (cache, cache / "kernels", cache / "extensions"):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    for library in libraries(str(cache)) + libraries(str(cache), "extensions"):
        assert stat.S_IMODE(os.stat(library).st_mode) == 0o644


# --- files ------------------------------------------------------------------------------


def test_each_library_has_a_manifest_with_its_hash(warm_cache):
    for library in libraries(warm_cache) + libraries(warm_cache, "extensions"):
        check = subprocess.run(["sha256sum", "-c", os.path.basename(library) + ".sha256"],
                               cwd=os.path.dirname(library), capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("folder", ["kernels", "extensions"])
def test_a_truncated_library_is_rebuilt_not_loaded(warm_cache, folder):
    """Loading a library cut at 8000 bytes kills the process with SIGBUS (measured: exit
    135 before manifests existed)."""
    library = libraries(warm_cache)[0] if folder == "kernels" else \
        fast_entry_library(warm_cache)
    with open(library, "r+b") as f:
        f.truncate(8000)
    proc = run_jit(warm_cache)
    assert_ran(proc)
    assert f"not loading the cached library {library}" in proc.stderr
    assert "does not match the hash" in proc.stderr
    assert os.path.getsize(library) > 8000
    assert run_jit(warm_cache).stderr == ""  # repaired: the next run loads it quietly


def test_a_planted_library_is_rebuilt_not_loaded(warm_cache, tmp_path):
    marker = tmp_path / "planted-ran"
    library = libraries(warm_cache)[0]
    plant_library(library + ".new", str(marker))
    os.chmod(library + ".new", 0o644)
    os.replace(library + ".new", library)
    proc = run_jit(warm_cache)
    assert_ran(proc)
    assert "does not match the hash" in proc.stderr
    assert not marker.exists()


@pytest.mark.parametrize("damage,reason", [
    ("chmod-library", "writable by group and others (mode 0666)"),
    ("exec-bits", "has mode 0755, wider than 0644"),
    ("symlink", "cannot be read safely"),
    ("bad-manifest", "is malformed"),
    ("manifest-of-another-file", "is malformed"),
])
def test_a_library_that_fails_a_check_is_rebuilt(warm_cache, tmp_path, damage, reason):
    marker = tmp_path / "planted-ran"
    library = libraries(warm_cache)[0]
    manifest = library + ".sha256"
    if damage == "chmod-library":
        os.chmod(library, 0o666)
    elif damage == "exec-bits":
        os.chmod(library, 0o755)
    elif damage == "symlink":
        elsewhere = str(tmp_path / "elsewhere.so")
        plant_library(elsewhere, str(marker))
        os.unlink(library)
        os.symlink(elsewhere, library)
    elif damage == "bad-manifest":
        with open(manifest, "w") as f:
            f.write("not a hash\n")
    else:
        text = open(manifest).read().replace(os.path.basename(library), "other.so")
        with open(manifest, "w") as f:
            f.write(text)
    proc = run_jit(warm_cache)
    assert_ran(proc)
    assert reason in proc.stderr
    assert not marker.exists()
    assert not os.path.islink(library)
    assert stat.S_IMODE(os.stat(library).st_mode) == 0o644


def test_a_library_from_before_manifests_is_rebuilt_quietly(warm_cache):
    library = libraries(warm_cache)[0]
    os.unlink(library + ".sha256")
    proc = run_jit(warm_cache)
    assert_ran(proc)
    assert proc.stderr == ""
    assert os.path.exists(library + ".sha256")


def test_processes_building_at_once_leave_a_consistent_cache(tmp_path):
    """Two builds of one source differ in bytes (the temporary file name is compiled in),
    so manifest and library must be installed as one step (a lock): afterwards every
    library matches its manifest and nobody warns."""
    import sys

    from fault_helpers import ROOT, child_env

    cache = str(tmp_path / "cache")
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT,
                              env=child_env(EXECMODE_CACHE_DIR=cache)) for _ in range(3)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    test_each_library_has_a_manifest_with_its_hash(cache)
    assert not [f for f in os.listdir(os.path.join(cache, "kernels")) if f.startswith(".tmp-")]
    assert run_jit(cache).stderr == ""
