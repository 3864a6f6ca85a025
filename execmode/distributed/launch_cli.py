"""``execmode launch -n N SCRIPT [ARGS...]``: start N processes of a script under the
installed ``mpiexec`` (a thin wrapper: it runs ``mpiexec -n N python -m
execmode.distributed.rank_runner SCRIPT ARGS``, and its exit status is mpiexec's). Each
process gets torchrun's variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``), so a script that reads them (nanoGPT's ``train.py``) takes its
distributed path, and ``init_process_group()`` joins the N processes."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ..cli_args import add_script_argument, parse_script_command, require_script

NO_MPIEXEC = ("execmode launch: no mpiexec found (on PATH or beside {python}); "
              "pip install 'execmode[distributed]' installs MPICH's, or give --mpiexec PATH")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("launch", help="run a script as N processes under mpiexec "
                              "(data-parallel training)", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--nproc", type=int, required=True, metavar="N",
                   help="how many processes (ranks) to start; more than the machine's cores "
                        "is allowed (oversubscribed)")
    p.add_argument("--profile", action="store_true",
                   help="record every rank (rank0.emsession ... in one run folder in the "
                        "session folder); execmode report FOLDER merges them into one "
                        "Chrome trace, a process per rank")
    p.add_argument("--session-dir", metavar="DIR",
                   help="with --profile: make the run folder in DIR instead")
    p.add_argument("--break", dest="break_on", choices=("nan", "inf"),
                   help="the first rank whose op or kernel makes a NaN (or an Inf) stops, "
                        "naming its rank, the op and the line; the others stop at their "
                        "next collective, saying why")
    p.add_argument("--mpiexec", metavar="PATH",
                   help="the mpiexec to run (default: the one beside this Python, else the "
                        "first on PATH)")
    add_script_argument(p)
    p.set_defaults(handler=launch_command, parser=p)


def find_mpiexec(given: str | None = None, search_path: str | None = None,
                 python: str = sys.executable) -> str | None:
    """The mpiexec to run: ``given``, else the one installed beside ``python`` (the mpich
    wheel's, also when its environment is not activated), else the first on PATH."""
    if given is not None:
        found = shutil.which(given)
        return str(Path(found).resolve()) if found else None
    beside = Path(python).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec", path=search_path)


def launch_command(opts) -> int:
    parse_script_command(opts.parser, opts)
    if opts.nproc < 1:
        opts.parser.error(f"-n must be at least 1, got {opts.nproc}")
    require_script(opts.parser, opts)
    mpiexec = find_mpiexec(opts.mpiexec)
    if mpiexec is None:
        if opts.mpiexec is not None:
            print(f"execmode launch: --mpiexec {opts.mpiexec}: no such program",
                  file=sys.stderr)
        else:
            print(NO_MPIEXEC.format(python=sys.executable), file=sys.stderr)
        return 2
    argv = [mpiexec, "-n", str(opts.nproc), sys.executable, "-m",
            "execmode.distributed.rank_runner", opts.script, *opts.args]
    env = dict(os.environ)
    # MPICH runs more processes than cores as asked; Open MPI needs to be told.
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    if opts.break_on:
        env["EXECMODE_RANK_BREAK"] = opts.break_on
    if opts.profile:
        from execmode.profilers.ranks import RANKS_DIR_ENV, new_run_folder

        try:
            folder = new_run_folder(opts.script, opts.session_dir)
        except OSError as e:
            print(f"execmode launch: cannot make the run folder: {e}", file=sys.stderr)
            return 2
        env[RANKS_DIR_ENV] = str(folder)
        print(f"execmode launch: recording {opts.nproc} ranks into {folder} (one trace of "
              f"them all: execmode report {folder})", file=sys.stderr)
    elif opts.session_dir:
        opts.parser.error("--session-dir goes with --profile")
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(mpiexec, argv, env)  # mpiexec's exit status and signals are launch's
    except OSError as e:
        print(f"execmode launch: could not run {mpiexec}: {e}", file=sys.stderr)
        return 2
    return 0  # not reached
