"""A small eager workload for the profiler tests: an MLP forward and backward pass."""

import sys

import execmode as em


def main(steps: int) -> None:
    em.random.seed(0)
    x = em.randn(32, 64)
    w1 = em.randn(64, 128, requires_grad=True)
    w2 = em.randn(128, 10, requires_grad=True)
    for step in range(steps):
        with em.named_scope("mlp"):
            h = em.relu(x @ w1)
            out = h @ w2
        loss = em.mean(out * out)
        loss.backward()
        print(f"step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
