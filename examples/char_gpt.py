"""A 2-layer character-level GPT written as a PyTorch user writes one, trained eagerly and
under em.jit from the same seed: the losses agree step by step.

    python examples/char_gpt.py                 # eager, then the same training under em.jit
    python examples/char_gpt.py --jit           # only the jitted training step
    python examples/char_gpt.py --resume        # continue from the checkpoint saved halfway
    execmode tui examples/char_gpt.py --jit     # step through it in the debugger

Embedding, causal self-attention (em.tril + masked_fill), LayerNorm, a GELU MLP, dropout,
AdamW with a linear warm-up into a cosine schedule, gradient clipping, a safetensors
checkpoint, and top-k sampling. The text is a few of Shakespeare's sonnets (public domain).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile

from _common import QUICK, size

import execmode as em
import execmode.nn as nn
import execmode.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("causal", em.tril(em.ones(block_size, block_size, dtype=em.bool)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)   # (B, h, T, d)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.causal[:T, :T], float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer=2, n_head=4, n_embd=64, dropout=0.1):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, block_size, dropout)
                                     for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.drop(self.tok_emb(idx) + self.pos_emb(em.arange(T)))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def load_text():
    with open(os.path.join(HERE, "data", "sonnets.txt"), encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    return em.tensor([stoi[c] for c in text], dtype=em.int64), chars


def get_batch(data, batch_size, block_size):
    starts = em.random.randint(0, data.shape[0] - block_size - 1, (batch_size,)).tolist()
    x = em.stack([data[i:i + block_size] for i in starts])
    y = em.stack([data[i + 1:i + 1 + block_size] for i in starts])
    return x, y


def build(vocab_size, steps, block_size, seed=0):
    em.random.seed(seed)
    model = GPT(vocab_size, block_size)
    opt = em.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    warmup = max(steps // 10, 1)
    sched = em.optim.lr_scheduler.SequentialLR(opt, [
        em.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=warmup),
        em.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps - warmup)],
        milestones=[warmup])
    return model, opt, sched


def make_train_step(model, opt):
    """One training step (forward, loss, backward, clipping, AdamW's update): what
    ``--jit`` runs under em.jit (benchmarks/bench_example_first_calls.py times its first
    call against PyTorch's twin under torch.compile)."""
    def train_step(xb, yb):
        logits = model(xb)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), yb.view(-1))
        opt.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss, norm
    return train_step


def train(data, vocab_size, *, steps, batch_size, block_size, jit, state=None,
          checkpoint=None):
    """Losses of the training steps; ``state`` resumes a checkpoint; ``checkpoint``: where
    to save one halfway."""
    model, opt, sched = build(vocab_size, steps, block_size)
    first = 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        first = int(state["step"])

    train_step = make_train_step(model, opt)
    step_fn = em.jit(train_step) if jit else train_step
    losses = []
    for step in range(first, steps):
        # Batches and dropout masks depend on the step alone: a resumed run draws what
        # the uninterrupted one drew, and so does the jitted step.
        em.random.seed(1000 + step)
        xb, yb = get_batch(data, batch_size, block_size)
        lr = sched.get_last_lr()[0]   # the rate this step uses
        loss, norm = step_fn(xb, yb)
        sched.step()
        losses.append(loss.item())
        if step % max(steps // 8, 1) == 0 or step == steps - 1:
            print(f"  step {step:4d}  loss {losses[-1]:.4f}  grad norm {norm.item():.3f}  "
                  f"lr {lr:.2e}")
        if checkpoint and step + 1 == steps // 2:
            em.save({"model": model.state_dict(), "opt": opt.state_dict(),
                     "sched": sched.state_dict(), "step": step + 1, "steps": steps},
                    checkpoint)
            print(f"  checkpoint after step {step} (--resume continues from it)")
    return model, losses


@em.no_grad()
def generate(model, idx, new_tokens, top_k=5):
    model.eval()
    for _ in range(new_tokens):
        logits = model(idx[:, -model.block_size:])[:, -1, :]
        kth = em.topk(logits, top_k).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
        idx = em.cat([idx, em.multinomial(F.softmax(logits, dim=-1), num_samples=1)], dim=1)
    model.train()
    return idx


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jit", action="store_true", help="train only under em.jit")
    parser.add_argument("--eager", action="store_true", help="train only eagerly")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the checkpoint saved halfway")
    parser.add_argument("--checkpoint", default=os.path.join(tempfile.gettempdir(),
                                                             "execmode_char_gpt.safetensors"))
    args = parser.parse_args()
    data, chars = load_text()
    steps, batch_size, block_size = size(200, 6), size(8, 4), size(32, 16)
    modes = ["jit"] if args.jit else ["eager"] if args.eager else ["eager", "jit"]
    state = None
    if args.resume:
        state = em.load(args.checkpoint)
        steps = int(state["steps"])
        print(f"resuming {args.checkpoint} at step {int(state['step'])} of {steps}")
    losses = {}
    for mode in modes:
        print(f"{mode}:")
        model, losses[mode] = train(
            data, len(chars), steps=steps, batch_size=batch_size, block_size=block_size,
            jit=mode == "jit", state=state, checkpoint=None if args.resume else args.checkpoint)
        # No wall time here: one run on a shared machine is no measurement (mlp_forward.py
        # and benchmarks/ time eager against jit by execmode's protocol).
        print(f"  {mode}: {len(losses[mode])} steps")
    em.random.seed(2)
    prompt = em.tensor([[chars.index("S")]], dtype=em.int64)
    sample = generate(model, prompt, size(120, 10))
    print("sample:", repr("".join(chars[i] for i in sample[0].tolist())))
    if len(modes) == 2:
        worst = max(abs(a - b) / max(abs(a), 1e-12)
                    for a, b in zip(losses["eager"], losses["jit"]))
        ok = worst <= 1e-5
        print(f"VERDICT: {'confirmed' if ok else 'refuted'} - eager and jit losses agree over "
              f"{len(losses['jit'])} steps (largest relative difference {worst:.1e}; the "
              f"kernels' exp may differ from NumPy's by an ulp, and sums round in another "
              f"order)"
              + (" [quick mode]" if QUICK else ""))


if __name__ == "__main__":
    main()
