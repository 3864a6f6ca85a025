"""Small models written the PyTorch way, trained in execmode and in PyTorch: a GPT, a CNN
and an MLP, one training step (forward, loss, backward, optimizer step) at a time.

    python benchmarks/bench_torch_programs.py            # every model (~15 minutes on 2 cores)
    python benchmarks/bench_torch_programs.py --quick    # fewer calls, 5 rounds, 1 first call
    python benchmarks/bench_torch_programs.py --only gpt mlp
    python benchmarks/bench_torch_programs.py --no-first # the steady steps only
    python benchmarks/bench_torch_programs.py --device cuda   # on a GPU

Each model is defined once, as a function of a ``torch``-like module: the same code builds
it with ``execmode.torch`` and with PyTorch (the local wheel), at the same sizes, and
execmode's copies load PyTorch's initial weights (``state_dict`` through NumPy). Every
copy trains on the same batch. Five ways to run the step:

* **execmode eager**: the step as written, ``import execmode.torch as torch``.
* **execmode jit (step)**: the whole step under ``em.jit`` (forward, backward and the
  optimizer's update in one graph).
* **execmode jit (model)**: ``model = torch.compile(model)`` (em.jit of the module), the
  loss, ``backward()`` and ``opt.step()`` outside it: the way PyTorch 2 users compile.
* **torch eager**: PyTorch's step.
* **torch.compile (model)**: ``torch.compile(model)`` with PyTorch's default backend
  (inductor: it generates C++ and needs a compiler), the rest as in torch eager. Its steady
  step is timed after the warm-up calls have compiled it; its first step (compile
  included) is in the first-call table.

Before anything is timed, the first two steps' losses of every mode are checked against
torch eager's. Single-threaded by default, every framework alike: the process is pinned to
one CPU, BLAS, OpenMP and PyTorch's intra-op pool get one thread (``torch.set_num_threads``,
``em.set_num_threads``) before anything is imported. Steady steps: interleaved rounds
(benchmarks/timing.py, profilers/measure.py), the median and interquartile range per step;
goals (issue 32) judged on the medians: execmode eager <= 1.5x torch eager; execmode's jit
<= 1.0x torch eager and <= torch.compile's steady step. First steps: one fresh process per
mode and round, execmode's kernel cache and inductor's cache both empty.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def _parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="MODEL",
                        help="models by name: gpt, cnn, mlp (default: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--no-first", action="store_true",
                        help="leave out the first steps (fresh processes)")
    parser.add_argument("--first-call", nargs=2, metavar=("MODEL", "MODE"),
                        help=argparse.SUPPRESS)
    # timing.add_arguments' options, spelled out: importing timing loads NumPy, whose
    # OpenBLAS reads its thread count once, before _single_threaded has set it.
    parser.add_argument("--quick", action="store_true",
                        help="fewer calls per round, 5 rounds, one first step per mode")
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved rounds (default 7, quick 5; at least 5)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write the tables, stamped with the machine, to FILE")
    return parser.parse_args(argv)


def _single_threaded(threads: int) -> None:
    """Thread counts for every framework before any is imported, and the process pinned
    to ``threads`` CPUs (benchmarks/bench_peers.py says why)."""
    usable = sorted(os.sched_getaffinity(0))
    if threads < len(usable):
        os.sched_setaffinity(0, usable[-threads:])
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "EXECMODE_NUM_THREADS"):
        os.environ[var] = str(threads)
    # Steady steps: a kernel cache and an inductor cache of this run's own. A first-step
    # child gets empty ones (fresh_process_result, _first_call_child).
    os.environ.setdefault("EXECMODE_CACHE_DIR", tempfile.mkdtemp(prefix="execmode-bench-"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                          tempfile.mkdtemp(prefix="execmode-bench-inductor-"))


_ARGS = None
if __name__ == "__main__":
    _ARGS = _parse()
    if _ARGS.first_call:
        # A fresh process: inductor's cache empty too (execmode's is, from the parent).
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cold-")
    _single_threaded(_ARGS.threads)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import math  # noqa: E402

import numpy as np  # noqa: E402
import timing  # noqa: E402

import execmode as em  # noqa: E402
import execmode.torch as et  # noqa: E402

try:
    import torch
except Exception as exc:  # noqa: BLE001 - PyTorch is an optional peer
    torch, TORCH_MISSING = None, repr(exc)
else:
    TORCH_MISSING = ""


# --- the models, each written once against a torch-like module ---------------------------

def gpt(torch, *, vocab=65, block=32, n_layer=2, n_head=4, n_embd=64):
    """A GPT as minGPT writes one: token and position embeddings, pre-norm blocks of
    causal self-attention (a tril mask buffer, masked_fill, softmax) and a GELU MLP."""
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.register_buffer("bias", torch.tril(torch.ones(block, block))
                                 .view(1, 1, block, block))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                     nn.Linear(4 * n_embd, n_embd))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, n_embd), wpe=nn.Embedding(block, n_embd),
                h=nn.ModuleList([Block() for _ in range(n_layer)]), ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)

        def forward(self, idx):
            B, T = idx.size()
            pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            return self.lm_head(self.transformer.ln_f(x))

    return GPT()


def gpt_loss(torch, logits, targets):
    return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)),
                                             targets.view(-1))


def cnn(torch):
    """pytorch/examples' MNIST network, smaller: two 3x3 convolutions with ReLU and max
    pooling, then two linear layers."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 16 x 14 x 14
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 32 x 7 x 7
        nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10))


def mlp(torch):
    """The d2l MLP chapter's network, a layer deeper: 784-256-256-10 with ReLU."""
    nn = torch.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256),
                         nn.ReLU(), nn.Linear(256, 10))


def classifier_loss(torch, logits, targets):
    return torch.nn.functional.cross_entropy(logits, targets)


def _gpt_batch(rng):
    tokens = rng.integers(0, 65, (16, 33))
    return tokens[:, :-1], tokens[:, 1:]


def _image_batch(rng):
    return (rng.standard_normal((32, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, 32))


def _flat_batch(rng):
    return (rng.standard_normal((64, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, 64))


def _adamw(torch, params):
    return torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1)


def _sgd(torch, params):
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


def _adam(torch, params):
    return torch.optim.Adam(params, lr=1e-3)


# name: (model, loss, batch, optimizer, what it is)
MODELS = {
    "gpt": (gpt, gpt_loss, _gpt_batch, _adamw,
            "GPT, 2 layers, 4 heads, 64 wide, context 32, vocabulary 65; batch 16; AdamW"),
    "cnn": (cnn, classifier_loss, _image_batch, _sgd,
            "CNN, conv 16 and 32 (3x3) with max pooling, linear 1568-64-10; 1x28x28, batch 32; "
            "SGD with momentum"),
    "mlp": (mlp, classifier_loss, _flat_batch, _adam, "MLP 784-256-256-10; batch 64; Adam"),
}

MODES = ("execmode eager", "execmode jit (step)", "execmode jit (model)", "torch eager",
         "torch.compile (model)")
EXECMODE_MODES = MODES[:3]
FIRST_MODES = ("execmode jit (step)", "execmode jit (model)", "torch.compile (model)")


# --- building the candidates --------------------------------------------------------------

def _initial_state(name: str) -> dict:
    """PyTorch's initial weights for ``name``, as NumPy arrays (seeded), or execmode's
    where PyTorch is not installed."""
    build = MODELS[name][0]
    if torch is not None:
        torch.manual_seed(0)
        return {k: v.detach().numpy().copy() for k, v in build(torch).state_dict().items()}
    et.manual_seed(0)
    return {k: v.numpy().copy() for k, v in build(et).state_dict().items()}


def _framework(mode: str):
    return et if mode.startswith("execmode") else torch


def step_for(name: str, mode: str, state: dict, device: str):
    """A zero-argument training step of ``mode``, from ``state``'s weights; it returns the
    loss."""
    build, loss_fn, batch, make_opt, _ = MODELS[name]
    fw = _framework(mode)
    model = build(fw)
    model.load_state_dict({k: fw.from_numpy(v.copy()) for k, v in state.items()})
    model.to(device)
    opt = make_opt(fw, model.parameters())
    x_np, y_np = batch(np.random.default_rng(1))
    x = fw.from_numpy(np.ascontiguousarray(x_np)).to(device)
    y = fw.from_numpy(np.ascontiguousarray(y_np).astype(np.int64)).to(device)
    forward = model
    if mode.endswith("(model)"):
        forward = fw.compile(model)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(fw, forward(x), y)
        loss.backward()
        opt.step()
        return loss

    if mode == "execmode jit (step)":
        step = em.jit(step)
    return lambda: step(x, y)


def _sync(mode: str, device: str):
    if device == "cpu":
        return lambda: None
    return _framework(mode).cuda.synchronize


def _sync_all(modes, device: str):
    """What measure() runs at the end of each round on a GPU: every framework's queued
    work belongs to the round that queued it."""
    if device == "cpu":
        return None
    syncs = {_framework(mode).cuda.synchronize for mode in modes}
    return lambda: [sync() for sync in syncs]


def _loss_value(loss) -> float:
    return float(loss.item())


def check(name: str, steps: dict, reference: str) -> None:
    """The first two steps' losses of every mode against ``reference``'s."""
    want = [_loss_value(steps[reference]()) for _ in range(2)]
    for mode, step in steps.items():
        if mode == reference:
            continue
        got = [_loss_value(step()) for _ in range(2)]
        if not np.allclose(got, want, rtol=2e-3, atol=2e-4):
            raise SystemExit(f"{name}: {mode}'s losses {got} differ from {reference}'s {want}")


def available_modes(device: str) -> tuple:
    if torch is None or (device != "cpu" and not torch.cuda.is_available()):
        return EXECMODE_MODES
    return MODES


# --- first steps in fresh processes -------------------------------------------------------

def _first_call_child(name: str, mode: str, device: str) -> None:
    state = _initial_state(name)
    step = step_for(name, mode, state, device)
    sync = _sync(mode, device)
    t0 = time.perf_counter()
    step()
    sync()
    timing.report_child_result(time.perf_counter() - t0)


def first_steps(name: str, modes: tuple, rounds: int, args) -> dict:
    argv = ["--threads", str(args.threads), "--device", args.device]
    return timing.first_call_spreads(
        {mode: timing.child_argv(__file__, *argv, "--first-call", name, mode)
         for mode in modes}, rounds)


# --- the report ---------------------------------------------------------------------------

GOALS = {  # mode: (goal over torch eager, goal over torch.compile's steady step)
    "execmode eager": (1.5, None),
    "execmode jit (step)": (1.0, 1.0),
    "execmode jit (model)": (1.0, 1.0),
}


def _why(reason: str) -> str:
    """A verdict's reason in a word or two, for a cell (the mode names hold parentheses,
    so timing.goal_cell's cut at the first one does not fit here)."""
    if "fewer than" in reason:
        return "few rounds"
    if "busier than its CPUs" in reason:
        return "busy machine"
    if "disagree" in reason:
        return "rounds disagree"
    return reason


def ratio_cells(spreads: dict, mode: str, peer: str, goal, verdicts: list) -> list:
    """[ratio, goal] cells of ``mode`` over ``peer``; the goal's verdict goes to
    ``verdicts``."""
    if peer not in spreads:
        return ["-", "-"]
    ratio = timing.ratio_cell(spreads[mode], spreads[peer], mode, peer)
    if goal is None:
        return [ratio, "-"]
    verdict = timing.judge_ratio(spreads[mode], spreads[peer], goal, a_name=mode, b_name=peer)
    verdicts.append(verdict)
    state = {"met": "met", "missed": "**missed**"}.get(verdict.state) or \
        f"undecided ({_why(verdict.reason)})"
    medians = spreads[mode].median / spreads[peer].median
    return [ratio, f"<= {goal}x: {state}, medians {medians:.2f}x"]


def main() -> int:
    args = _ARGS or _parse()
    if args.first_call:
        _first_call_child(*args.first_call, args.device)
        return 0
    if args.device != "cpu" and not em.cuda_is_available():
        raise SystemExit(f"--device {args.device}: execmode finds no CUDA GPU here")
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    em.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
        report.note(f"PyTorch {torch.__version__} ({torch.__file__.split('site-packages')[0]}"
                    f"...); {args.threads} thread(s) each (torch {torch.get_num_threads()}, "
                    f"execmode {em.get_num_threads()}), the process pinned to "
                    f"{len(os.sched_getaffinity(0))} CPU(s); device {args.device}.")
    else:
        report.note(f"PyTorch is not installed here ({TORCH_MISSING}): its columns are left "
                    "out.")
    modes = available_modes(args.device)
    if args.device != "cpu" and modes == EXECMODE_MODES and torch is not None:
        report.note("PyTorch here has no CUDA: its columns are left out on the GPU.")
    names = [n for n in MODELS if not args.only or n in args.only]
    unknown = set(args.only or ()) - set(MODELS)
    if unknown:
        raise SystemExit(f"unknown model(s) {sorted(unknown)}: {', '.join(MODELS)}")

    steady, ratios, firsts, verdicts = [], [], [], []
    first_rounds = 1 if args.quick else (args.rounds or timing.MIN_ROUNDS)
    for name in names:
        state = _initial_state(name)
        steps = {mode: step_for(name, mode, state, args.device) for mode in modes}
        reference = "torch eager" if "torch eager" in steps else "execmode eager"
        t0 = time.perf_counter()
        check(name, steps, reference)
        print(f"  {name}: losses agree ({time.perf_counter() - t0:.1f} s with the first "
              "steps' compiles)", flush=True)
        timing.steady_state_operators()
        calls = 2 if args.quick else None
        spreads = timing.measure(steps, rounds=rounds, calls=calls, warmup=2, round_s=0.2,
                                 sync=_sync_all(modes, args.device))
        print(f"  {name}: " + ", ".join(f"{m} {timing.time_cell(s)}"
                                        for m, s in spreads.items()), flush=True)
        steady.append([name, *(timing.time_cell(spreads.get(m)) for m in MODES)])
        for mode, (vs_eager, vs_compile) in GOALS.items():
            ratios.append([name, mode,
                           *ratio_cells(spreads, mode, "torch eager", vs_eager, verdicts),
                           *ratio_cells(spreads, mode, "torch.compile (model)", vs_compile,
                                        verdicts)])
        if not args.no_first:
            chosen = [m for m in FIRST_MODES if m in modes]
            spreads = first_steps(name, tuple(chosen), first_rounds, args)
            print(f"  {name} first steps: " + ", ".join(
                f"{m} {timing.time_cell(s)}" for m, s in spreads.items()), flush=True)
            firsts.append([name, *(timing.time_cell(spreads.get(m)) for m in FIRST_MODES)])

    for name in names:
        report.note(f"- **{name}**: {MODELS[name][4]}.")
    report.table(["model", *MODES], steady,
                 title=f"A training step (forward, loss, backward, optimizer step): median "
                       f"(interquartile range) of {rounds} interleaved rounds")
    report.table(["model", "execmode", "vs torch eager", "goal", "vs torch.compile",
                  "goal"], ratios,
                 title="execmode's step over PyTorch's (issue 32's goals, on the medians; a "
                       "ratio cell only where the rounds carry one)")
    counts = {state: sum(v.state == state for v in verdicts)
              for state in ("met", "missed", "undecided")}
    if verdicts:
        report.note(f"Goals: {counts['met']} met, {counts['missed']} missed, "
                    f"{counts['undecided']} undecided (of {len(verdicts)}).")
    if firsts:
        report.table(["model", *FIRST_MODES], firsts,
                     title=f"The first step, compile included: median (interquartile range) "
                           f"of {first_rounds} fresh process(es) each, interleaved; "
                           "execmode's kernel cache and inductor's cache empty")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
