"""What running public PyTorch programs with only their imports changed needed (issue 32,
docs/pytorch.md "Programs tried"), each checked against PyTorch where it computes."""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_twins import torch_or_skip

import execmode as em
import execmode.torch as torch
import execmode.torch.nn as nn


def _lazy_mlp(lib):
    return lib.nn.Sequential(lib.nn.Flatten(), lib.nn.LazyLinear(8), lib.nn.ReLU(),
                             lib.nn.LazyLinear(3))


def _train_lazy(lib, x, y, weights=None):
    """d2l's order: the optimizer is built before the model has seen a batch."""
    model = _lazy_mlp(lib)
    opt = lib.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for step in range(3):
        loss = lib.nn.functional.cross_entropy(model(x), y)
        if step == 0 and weights is not None:  # the first call made the parameters
            with lib.no_grad():
                for p, w in zip(model.parameters(), weights):
                    p.copy_(lib.tensor(w))
            loss = lib.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_an_optimizer_built_before_a_lazy_model_s_first_call_trains_as_pytorch():
    real = torch_or_skip()
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 2, 5)).astype(np.float32), rng.integers(0, 3, 6)
    start = _initial(real, x, y)
    real.manual_seed(0)
    want, weights = _train_lazy(real, real.tensor(x), real.tensor(y))
    got, ours = _train_lazy(torch, torch.tensor(x), torch.tensor(y), weights=start)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(ours, weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def _initial(real, x, y):
    real.manual_seed(0)
    model = _lazy_mlp(real)
    model(real.tensor(x))
    return [p.detach().numpy() for p in model.parameters()]


def test_a_lazy_group_s_first_step_needs_the_first_call_and_runs_eagerly():
    model = nn.Sequential(nn.LazyLinear(4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with pytest.raises(em.ArgumentError, match="still uninitialized"):
        opt.step()
    with pytest.raises(em.ArgumentError, match="still uninitialized"):
        opt.state_dict()
    model(torch.ones(2, 3)).sum().backward()

    def step():
        opt.step()

    with pytest.raises(em.ArgumentError, match="run that step eagerly"):
        em.jit(step)()
    opt.step()
    assert set(opt.state_dict()["state"]) == {0, 1}
    em.jit(step)()  # the state exists now


def test_distributed_names_import_and_say_what_is_missing_when_used():
    # nanoGPT imports them at the top and uses them only when RANK is set: a single process
    # runs as before. Without a process group (or with NCCL) they say what to do
    # (tests/distributed runs them under mpiexec).
    from execmode.torch.distributed import destroy_process_group, init_process_group
    from execmode.torch.nn.parallel import DistributedDataParallel as DDP

    assert torch.distributed.is_initialized() is False
    for call, says in ((lambda: init_process_group(backend="nccl"), "NCCL"),
                       (destroy_process_group, "init_process_group"),
                       (lambda: DDP(nn.Linear(2, 2), device_ids=[0]), "init_process_group")):
        with pytest.raises(torch.distributed.DistributedError, match=says):
            call()


def test_data_parallel_on_one_device_is_the_module():
    real = torch_or_skip()
    ours, theirs = nn.DataParallel(nn.Linear(3, 2)), real.nn.DataParallel(real.nn.Linear(3, 2))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.module.load_state_dict({k: torch.tensor(v.detach().numpy())
                                 for k, v in theirs.module.state_dict().items()})
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(ours(torch.tensor(x)).detach().numpy(),
                               theirs(real.tensor(x)).detach().numpy(), rtol=1e-6)


def test_an_attribute_set_on_a_compiled_module_lands_on_the_module_as_pytorch_s():
    real = torch_or_skip()
    for lib in (real, torch):
        model = lib.nn.Linear(2, 2)
        compiled = lib.compile(model)
        compiled.trainer = "t"  # d2l's Trainer.prepare_model
        assert model.trainer == "t" and compiled.trainer == "t"


def test_a_lazy_model_s_first_call_may_be_compiled():
    x = torch.ones(3, 5)

    def run(compiled):
        torch.manual_seed(0)
        model = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
        forward = torch.compile(model) if compiled else model
        loss = forward(x).square().sum()
        loss.backward()
        return [loss.item()] + [p.grad.numpy().copy() for p in model.parameters()]

    eager, jitted = run(False), run(True)
    assert jitted[0] == pytest.approx(eager[0], rel=1e-6)
    for a, b in zip(jitted[1:], eager[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_transformer_matches_pytorch_s_with_its_weights():
    real = torch_or_skip()
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=16, dropout=0.0)
    real.manual_seed(0)
    theirs, ours = real.nn.Transformer(**kw).eval(), nn.Transformer(**kw).eval()
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    ours.load_state_dict({k: torch.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(0)
    src = rng.standard_normal((5, 2, 8)).astype(np.float32)
    tgt = rng.standard_normal((4, 2, 8)).astype(np.float32)
    want = theirs(real.tensor(src), real.tensor(tgt),
                  tgt_mask=real.nn.Transformer.generate_square_subsequent_mask(4))
    got = ours(torch.tensor(src), torch.tensor(tgt),
               tgt_mask=nn.Transformer.generate_square_subsequent_mask(4))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(nn.Transformer.generate_square_subsequent_mask(3).numpy(),
                                  real.nn.Transformer.generate_square_subsequent_mask(3))


def test_next_of_parameters_as_pytorch_s_generator():
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    params = model.parameters()
    assert next(params) is model[0].weight and next(params) is model[0].bias
    assert len(model.parameters()) == 4 and model.parameters()[3] is model[1].bias
    assert next(model.parameters()).device == model[0].weight.device


def test_onnx_imports_and_export_refuses():
    import execmode.torch.onnx as onnx

    with pytest.raises(em.ArgumentError, match="state_dict"):
        onnx.export(nn.Linear(2, 2), (torch.ones(1, 2),), "model.onnx")


def test_saving_a_compiled_model_whole_says_to_save_its_state_dict(tmp_path):
    with pytest.raises(em.ArgumentError, match="whole module"):
        torch.save(torch.compile(nn.Linear(2, 2)), tmp_path / "m.pt")


def test_summary_writer_records_scalars_as_json_lines(tmp_path):
    import json

    from execmode.torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(log_dir=tmp_path / "run") as writer:  # karpathy/makemore logs so
        writer.add_scalar("Loss/train", torch.tensor(2.5), 10)
        writer.add_scalars("lr", {"a": 0.1}, 10)
        with pytest.warns(UserWarning, match="scalars and text only"):
            writer.add_histogram("w", torch.ones(3), 10)
        writer.flush()
    rows = [json.loads(line) for line in (tmp_path / "run" / "scalars.jsonl").open()]
    assert [(r["tag"], r["value"], r["step"]) for r in rows] == [
        ("Loss/train", 2.5, 10), ("lr/a", 0.1, 10)]
