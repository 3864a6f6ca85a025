"""``torch.utils.data``: the DataLoader and its samplers keep PyTorch's contract (batches,
lengths, drop_last, collate, argument checks), checked against real PyTorch where the
order is not random, and as permutations seeded by a generator where it is."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
from pytorch_twins import torch_or_skip

import execmode as em
import execmode.torch as torch
from execmode.torch.utils import data

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10) % 3
Point = namedtuple("Point", "x y")


class Squares(data.Dataset):
    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {"x": np.float32(i), "sq": i * i, "name": f"s{i}", "pair": (i, float(i))}


class Stream(data.IterableDataset):
    def __iter__(self):
        return iter(range(7))


def _plain(batch):
    """A batch as nested Python values, whatever framework made it."""
    if hasattr(batch, "tolist") and not isinstance(batch, np.generic):
        return ("tensor", str(batch.dtype).replace("torch.", ""), batch.tolist())
    if isinstance(batch, dict):
        return {k: _plain(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return (type(batch).__name__, [_plain(v) for v in batch])
    if isinstance(batch, list | tuple):
        return [type(batch).__name__, [_plain(v) for v in batch]]
    return batch


def _twin_cases(lib, utils):
    x, y = lib.tensor(X), lib.tensor(Y)
    return {
        "tensor dataset": utils.DataLoader(utils.TensorDataset(x, y), batch_size=4),
        "drop_last": utils.DataLoader(utils.TensorDataset(x), batch_size=3, drop_last=True),
        "dicts, numbers, strings": utils.DataLoader(_Squares(utils), batch_size=3),
        "namedtuples": utils.DataLoader([Point(np.ones(2), 1.5)] * 3, batch_size=2),
        "no batching": utils.DataLoader(utils.TensorDataset(x[:3]), batch_size=None),
        "batch_sampler": utils.DataLoader(list(range(9)), batch_sampler=utils.BatchSampler(
            utils.SequentialSampler(range(9)), 4, False)),
        "sampler": utils.DataLoader(list(range(6)), sampler=[5, 1, 2], batch_size=2),
        "collate_fn": utils.DataLoader(list(range(5)), batch_size=2, collate_fn=lambda b: b),
        "iterable": utils.DataLoader(_Stream(utils), batch_size=3),
        "iterable drop_last": utils.DataLoader(_Stream(utils), batch_size=3, drop_last=True),
        "subset + concat": utils.DataLoader(utils.Subset(list(range(10)), [4, 2])
                                            + utils.ConcatDataset([[7], [8, 9]]), batch_size=4),
    }


def _Squares(utils):  # noqa: N802 - the same dataset class on either framework's base
    return type("Squares", (utils.Dataset,), dict(Squares.__dict__))()


def _Stream(utils):  # noqa: N802
    return type("Stream", (utils.IterableDataset,), dict(Stream.__dict__))()


def test_batches_and_lengths_match_pytorch():
    real = torch_or_skip()
    import torch.utils.data as real_data

    ours, theirs = _twin_cases(torch, data), _twin_cases(real, real_data)
    for name in ours:
        got, want = list(ours[name]), list(theirs[name])
        assert [_plain(b) for b in got] == [_plain(b) for b in want], name
        if name not in ("iterable", "iterable drop_last"):
            assert len(ours[name]) == len(theirs[name]), name


def test_default_collate_types_and_structure():
    batch = data.default_collate([(np.zeros(2, np.float32), 1, 2.5, True, "a")] * 3)
    assert isinstance(batch, list) and len(batch) == 5
    assert batch[0].shape == (3, 2) and batch[0].dtype == em.float32
    assert batch[1].dtype == em.int64 and batch[2].dtype == em.float64
    assert batch[3].dtype == em.bool and batch[4] == ["a", "a", "a"]
    with pytest.raises(em.ArgumentError, match="shape"):
        data.default_collate([torch.zeros(2), torch.zeros(3)])
    images = data.default_collate([np.full((2, 2), 255, np.uint8)] * 3)  # kept, as PyTorch's
    assert images.dtype == em.uint8 and images.shape == (3, 2, 2) and images.max().item() == 255
    grads = data.default_collate([torch.ones(2, requires_grad=True)] * 2)
    assert grads.requires_grad  # stacked through the ops, gradients flow


def test_shuffle_is_a_seeded_permutation_each_epoch():
    ds = data.TensorDataset(torch.arange(20))
    loader = data.DataLoader(ds, batch_size=6, shuffle=True,
                             generator=torch.Generator().manual_seed(3))
    epochs = [torch.cat([b for (b,) in loader]).tolist() for _ in range(2)]
    assert all(sorted(e) == list(range(20)) for e in epochs) and epochs[0] != epochs[1]
    again = data.DataLoader(ds, batch_size=6, shuffle=True,
                            generator=torch.Generator().manual_seed(3))
    assert torch.cat([b for (b,) in again]).tolist() == epochs[0]
    torch.manual_seed(1)
    first = [b.tolist() for (b,) in data.DataLoader(ds, batch_size=20, shuffle=True)]
    torch.manual_seed(1)
    assert first == [b.tolist() for (b,) in data.DataLoader(ds, batch_size=20, shuffle=True)]


def test_the_tensor_dataset_fast_path_gives_the_per_sample_batches():
    x, y = torch.tensor(X), torch.tensor(Y)
    fast = list(data.DataLoader(data.TensorDataset(x, y), batch_size=4))
    slow = list(data.DataLoader(data.TensorDataset(x, y), batch_size=4,
                                collate_fn=data.default_collate))
    for (fx, fy), (sx, sy) in zip(fast, slow, strict=True):
        assert fx.tolist() == sx.tolist() and fy.tolist() == sy.tolist()
        assert fx.dtype == sx.dtype and fy.dtype == sy.dtype


def test_samplers_and_random_split():
    assert sorted(data.SubsetRandomSampler([3, 5, 9])) == [3, 5, 9]
    weighted = list(data.WeightedRandomSampler([0.0, 1.0, 0.0], 5))
    assert weighted == [1] * 5
    assert len(list(data.RandomSampler(range(4), replacement=True, num_samples=9))) == 9
    endless = data.DataLoader(range(4), batch_size=3, sampler=data.RandomSampler(
        range(4), replacement=True, num_samples=10**10))  # minGPT's: drawn lazily
    assert len(next(iter(endless))) == 3 and len(endless) == -(-10**10 // 3)
    drawn = list(data.RandomSampler(range(7), num_samples=10))
    assert len(drawn) == 10 and sorted(drawn[:7]) == list(range(7))
    a, b, c = data.random_split(range(10), [0.5, 0.3, 0.2],
                                generator=torch.Generator().manual_seed(0))
    assert (len(a), len(b), len(c)) == (5, 3, 2)
    assert sorted(list(a) + list(b) + list(c)) == list(range(10))
    assert [len(s) for s in data.random_split(range(5), [0.5, 0.5])] == [3, 2]
    with pytest.raises(em.ArgumentError, match="add up"):
        data.random_split(range(5), [2, 2])


def test_argument_checks_are_pytorchs():
    ds = list(range(5))
    for kwargs in (dict(sampler=[0], shuffle=True),
                   dict(batch_sampler=[[0]], batch_size=2),
                   dict(batch_sampler=[[0]], drop_last=True),
                   dict(batch_size=None, drop_last=True)):
        with pytest.raises(em.ArgumentError):
            data.DataLoader(ds, **kwargs)
    with pytest.raises(em.ArgumentError, match="IterableDataset"):
        data.DataLoader(Stream(), shuffle=True)
    with pytest.raises(em.ArgumentError, match="batch_size"):
        data.DataLoader(ds, batch_size=0)


def test_workers_load_in_the_main_process_with_one_warning(monkeypatch):
    from execmode.torch.utils.data import dataloader

    monkeypatch.setattr(dataloader, "_warned_workers", [False])
    with pytest.warns(UserWarning, match="main process"):
        loader = data.DataLoader(list(range(5)), batch_size=2, num_workers=4)
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4]]
    assert data.get_worker_info() is None


def test_batches_feed_a_jitted_training_step():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    @torch.compile
    def step(xb, yb):
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    loader = data.DataLoader(data.TensorDataset(torch.tensor(X) / 30, torch.tensor(Y)),
                             batch_size=5, shuffle=True, drop_last=True)
    losses = [step(xb, yb).item() for _ in range(3) for xb, yb in loader]
    assert len(losses) == 6 and all(np.isfinite(losses))
