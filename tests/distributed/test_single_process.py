"""What needs no second process: import hygiene (mpi4py only at init_process_group), the
error without mpi4py, refusals before a group exists, ``execmode launch`` without an
mpiexec, the rank runner's variables, and DistributedSampler's indices against
PyTorch's where torch is installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

import execmode as em
import execmode.torch as torch
from execmode.cli import main as cli_main
from execmode.distributed import launch_cli
from execmode.distributed.rank_runner import torchrun_variables
from execmode.torch import distributed as dist
from execmode.torch.utils.data import DistributedSampler


# Slow tier: a fresh interpreter.
@pytest.mark.slow
def test_importing_the_distributed_names_does_not_import_mpi4py():
    code = ("import sys, execmode.distributed, execmode.torch.distributed as d\n"
            "from execmode.torch.nn.parallel import DistributedDataParallel\n"
            "from execmode.torch.utils.data import DistributedSampler\n"
            "d.is_available(); d.is_initialized(); d.ReduceOp.SUM\n"
            "assert 'mpi4py' not in sys.modules, 'mpi4py imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_without_mpi4py_init_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(dist.DistributedError, match=r"pip install 'execmode\[distributed\]'"):
        dist.init_process_group("mpi")
    assert not dist.is_initialized()


def test_refusals_before_a_group_and_for_nccl():
    assert dist.is_initialized() is False
    with pytest.raises(dist.DistributedError, match="NCCL .* not built yet"):
        dist.init_process_group(backend="nccl")
    with pytest.raises(em.ArgumentError, match="unknown backend"):
        dist.init_process_group(backend="ucc")
    for call in (dist.get_rank, dist.get_world_size, dist.barrier, dist.destroy_process_group,
                 lambda: dist.all_reduce(torch.ones(2)),
                 lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2)),
                 lambda: DistributedSampler(list(range(4)))):
        with pytest.raises(dist.DistributedError, match="init_process_group"):
            call()
    with pytest.raises(AttributeError, match="not built yet"):
        dist.new_group  # noqa: B018 - the attribute's error is the check


def test_launch_without_mpiexec_says_what_to_install(tmp_path, monkeypatch, capsys):
    script = tmp_path / "s.py"
    script.write_text("print('never')\n")
    monkeypatch.setattr(launch_cli, "find_mpiexec", lambda given=None: None)
    assert cli_main(["launch", "-n", "2", str(script)]) == 2
    err = capsys.readouterr().err
    assert "no mpiexec found" in err and "pip install 'execmode[distributed]'" in err
    monkeypatch.undo()
    assert cli_main(["launch", "-n", "2", "--mpiexec", str(tmp_path / "nope"),
                     str(script)]) == 2
    assert "no such program" in capsys.readouterr().err
    assert launch_cli.find_mpiexec(python=str(tmp_path / "python"), search_path="") is None


def test_launch_says_its_usage_errors_once_with_status_2(tmp_path, monkeypatch, capsys):
    script = tmp_path / "s.py"
    script.write_text("print('never')\n")
    # no mpiexec: a check that let the call through would say so, not run anything
    monkeypatch.setattr(launch_cli, "find_mpiexec", lambda given=None: None)
    assert cli_main(["launch", "-n", "2", "--session-dir", str(tmp_path), str(script)]) == 2
    assert capsys.readouterr().err == "execmode launch: error: --session-dir goes with --profile\n"
    with pytest.raises(SystemExit) as exit_:
        cli_main(["launch", "-n", "0", str(script)])
    assert exit_.value.code == 2
    assert "expected a positive integer, got 0" in capsys.readouterr().err


def test_the_rank_runner_names_ranks_as_torchrun_does():
    assert torchrun_variables({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1",
                               "MPI_LOCALNRANKS": "2"}) == {
        "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    assert torchrun_variables({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"}) == {
        "RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4"}
    assert torchrun_variables({}) == {}


@pytest.mark.parametrize("n, replicas", [(10, 2), (11, 2), (7, 3), (2, 4), (1, 3)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sampler_partitions_as_pytorch_s(n, replicas, drop_last):
    parts = [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, shuffle=False,
                                     drop_last=drop_last)) for r in range(replicas)]
    assert len({len(p) for p in parts}) == 1  # every rank reads as many
    if drop_last:
        assert sorted(i for p in parts for i in p) == list(range(len(parts[0]) * replicas))
    else:
        assert set(i for p in parts for i in p) == set(range(n))
    try:
        import torch as real
    except ImportError:
        return
    from torch.utils.data.distributed import DistributedSampler as Theirs

    theirs = [list(Theirs(range(n), num_replicas=replicas, rank=r, shuffle=False,
                          drop_last=drop_last)) for r in range(replicas)]
    assert parts == theirs and real  # without a shuffle, the very same indices


def test_sampler_shuffles_by_seed_and_epoch():
    def order(rank, seed=0, epoch=0):
        s = DistributedSampler(range(20), num_replicas=2, rank=rank, seed=seed)
        s.set_epoch(epoch)
        return list(s)

    assert order(0) == order(0) and order(0) != order(0, epoch=1)
    assert order(0, seed=1) == order(0, epoch=1) != order(0)  # seed + epoch, as PyTorch
    assert sorted(order(0) + order(1)) == list(range(20))
    with pytest.raises(TypeError, match=r"rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)


def test_the_collective_timeout_comes_from_timeout_or_the_environment(monkeypatch):
    from datetime import timedelta

    from execmode.distributed.process_group import _timeout_seconds
    from execmode.errors import ArgumentError

    monkeypatch.delenv("EXECMODE_COLLECTIVE_TIMEOUT", raising=False)
    assert _timeout_seconds(None) == 1800.0  # PyTorch's 30 minutes
    assert _timeout_seconds(timedelta(seconds=90)) == 90.0 and _timeout_seconds(2.5) == 2.5
    monkeypatch.setenv("EXECMODE_COLLECTIVE_TIMEOUT", "7")
    assert _timeout_seconds(None) == 7.0
    for bad in (0, -1, "soon", True):
        with pytest.raises(ArgumentError, match="timeout"):
            _timeout_seconds(bad)
    monkeypatch.setenv("EXECMODE_COLLECTIVE_TIMEOUT", "soon")
    with pytest.raises(ArgumentError, match="EXECMODE_COLLECTIVE_TIMEOUT"):
        _timeout_seconds(None)
