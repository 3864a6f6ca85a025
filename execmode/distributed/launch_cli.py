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

from ..cli_args import (
    CliError,
    Command,
    add_script_argument,
    add_session_dir_option,
    parse_script_command,
    require_script,
    whole_number,
)

NO_MPIEXEC = ("no mpiexec found (on PATH or beside {python}); pip install "
              "'execmode[distributed]' installs MPICH's, or give --mpiexec PATH")


class LaunchCommand(Command):
    name = "launch"
    help = "run a script as N processes under mpiexec (data-parallel training)"
    description = __doc__.split("\n\n")[0]

    def prepare_parser(self, p) -> None:
        p.add_argument("-n", "--nproc", type=whole_number(1), required=True, metavar="N",
                       help="how many processes (ranks) to start; more than the machine's "
                            "cores is allowed (oversubscribed)")
        p.add_argument("--profile", action="store_true",
                       help="record every rank (rank0.emsession ... in one run folder in the "
                            "session folder); execmode report FOLDER merges them into one "
                            "Chrome trace, a process per rank")
        add_session_dir_option(p, "with --profile: make the run folder in DIR instead")
        p.add_argument("--break", dest="break_on", choices=("nan", "inf"),
                       help="the first rank whose op or kernel makes a NaN (or an Inf) stops, "
                            "naming its rank, the op and the line; the others stop at their "
                            "next collective, saying why")
        p.add_argument("--mpiexec", metavar="PATH",
                       help="the mpiexec to run (default: the one beside this Python, else "
                            "the first on PATH)")
        add_script_argument(p)

    def run(self, args) -> int:
        return launch_command(args)


LAUNCH = LaunchCommand()


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
    require_script(opts.parser, opts)
    if opts.session_dir and not opts.profile:
        raise CliError("--session-dir goes with --profile")
    mpiexec = find_mpiexec(opts.mpiexec)
    if mpiexec is None:
        if opts.mpiexec is not None:
            raise CliError(f"--mpiexec {opts.mpiexec}: no such program")
        raise CliError(NO_MPIEXEC.format(python=sys.executable))
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
            raise CliError(f"cannot make the run folder: {e}") from None
        env[RANKS_DIR_ENV] = str(folder)
        print(f"execmode launch: recording {opts.nproc} ranks into {folder} (one trace of "
              f"them all: execmode report {folder})", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(mpiexec, argv, env)  # mpiexec's exit status and signals are launch's
    except OSError as e:
        raise CliError(f"could not run {mpiexec}: {e}") from None
    return 0  # not reached
