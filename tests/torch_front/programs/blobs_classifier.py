"""A PyTorch training script, written the PyTorch way, run on execmode by its import.

    python tests/torch_front/programs/blobs_classifier.py [--epochs N] [--compile]

Swap ``execmode.torch`` for ``torch`` in the three imports below and it runs on PyTorch
(tests/torch_front/test_programs.py does, and compares the losses). Everything random is
drawn from NumPy with fixed seeds (data, initial weights, the batch order of each epoch),
so both frameworks start from the same weights and see the same batches.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import execmode.torch as torch
import execmode.torch.nn as nn
from execmode.torch.utils.data import DataLoader, Dataset, Sampler

CLASSES, FEATURES, HIDDEN = 3, 8, 32


class Blobs(Dataset):
    """Points around one centre per class, as NumPy rows (collated into tensors)."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        centres = np.random.default_rng(0).normal(0.0, 2.0, (CLASSES, FEATURES))
        self.labels = rng.integers(0, CLASSES, n)
        self.points = (centres[self.labels] + rng.normal(0.0, 1.5, (n, FEATURES))).astype(
            np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.points[i], int(self.labels[i])


class EpochPermutation(Sampler):
    """A new permutation each epoch, from NumPy (the same in every framework)."""

    def __init__(self, n, seed):
        self.n, self.rng = n, np.random.default_rng(seed)

    def __iter__(self):
        return iter(self.rng.permutation(self.n).tolist())

    def __len__(self):
        return self.n


def build_model():
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN),
                          nn.GELU(), nn.Linear(HIDDEN, CLASSES))
    rng = np.random.default_rng(1)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    train, test = Blobs(512, seed=2), Blobs(128, seed=3)
    loader = DataLoader(train, batch_size=32, sampler=EpochPermutation(len(train), 4))
    test_loader = DataLoader(test, batch_size=64)

    model = build_model().to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

    def train_step(x, y):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    step = torch.compile(train_step) if args.compile else train_step
    for epoch in range(args.epochs):
        model.train()
        total, batches = 0.0, 0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            total += step(x, y).item()
            batches += 1
        scheduler.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in test_loader:
                _, predicted = torch.max(model(x.to(device)), 1)
                correct += (predicted == y.to(device)).sum().item()
        print(f"epoch {epoch} loss {total / batches:.6f} accuracy {correct / len(test):.4f}")

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.pt")
        torch.save(model.state_dict(), path)
        restored = build_model()
        restored.load_state_dict(torch.load(path, map_location="cpu"))
        x = torch.from_numpy(test.points[:4])
        same = torch.allclose(restored(x), model.cpu()(x))
    print(f"restored from checkpoint: {'same outputs' if same else 'DIFFERENT outputs'}")


if __name__ == "__main__":
    main()
