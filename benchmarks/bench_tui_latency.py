"""How fast the TUI answers a person: launch to first pause, key to repaint, view switch.

    python benchmarks/bench_tui_latency.py [--ops 100000] [--presses 60] [--big 1000000]

Measured as a person sees it: the real ``execmode`` command runs in a tmux terminal of
120x40; keys go in with ``tmux send-keys`` and the screen is read with ``tmux
capture-pane`` every millisecond or so until it shows the answer. Each number is the
time from the input to the screen showing that answer (reading the screen costs ~2 ms,
so they are slight overestimates):

* launch -> first pause: ``execmode tui examples/nan_hunt.py`` until the status bar says
  ``paused at op 1`` (Python start, imports, the child, its first op: everything), and
  until the screen is complete (the source pane on the paused line, the Variables pane
  filled). Twice: as this environment runs Python (with ``PYTHONDONTWRITEBYTECODE=1``
  set, as on this repo's VMs, no bytecode cache is written, so both processes compile
  every execmode module at each start) and with a warm bytecode cache (a private
  ``PYTHONPYCACHEPREFIX``, as an installed package or any checkout without that variable
  runs);
* key -> repaint on a session of ``--ops`` ops: list keys (down, pagedown, end, home,
  up, pageup) until the op-detail line shows the new row and no row is still loading;
  p50/p95/max over ``--presses`` presses;
* search: Enter on ``/relu sort:time`` until the list's title gives the count;
* view switch: keys 1-9 until the view shows its loaded data (each view twice: the
  first opening composes it);
* ``execmode open`` of a ``--big``-op session until its last row is on screen.

Not a test: shared machines drift (the load average is printed). Goals (issue 15):
launch <= 1.0 s, key p95 <= 100 ms, view switch <= 150 ms, a 1M-op session open <= 1 s.
Needs tmux.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "tui"))  # big_session: synthetic sessions

from big_session import build_big_session  # noqa: E402

WIDTH, HEIGHT = 120, 40
GOALS = {"launch": 1.0, "key_p95": 0.100, "view_switch": 0.150, "open_big": 1.0}
LOADING = re.compile(r"^│\s+\d+  …", re.MULTILINE)  # a list row whose page is being read
# What each view shows once its data is there (the benchmark's sessions have no graphs).
LOADED = {"1": "ops · ", "2": "tensors", "3": "jitted functions", "4": "graph breaks",
          "5": "passes", "6": "compiled steps", "7": "top eager ops", "8": "breakpoints",
          "9": "stdout and stderr"}


class Terminal:
    """One tmux session running a command: send keys, read the screen, wait on it."""

    def __init__(self, command: str, name: str = "execmode-bench"):
        self.name = name
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        self.started = time.perf_counter()
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(WIDTH), "-y",
                        str(HEIGHT), command], check=True)

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def send(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait(self, done, timeout: float = 30.0) -> str:
        deadline = time.perf_counter() + timeout
        while True:
            text = self.screen()
            if done(text):
                return text
            if time.perf_counter() > deadline:
                raise TimeoutError(f"the screen never showed the answer:\n{text}")
            time.sleep(0.001)

    def timed(self, keys: list[str], done) -> float:
        t0 = time.perf_counter()
        self.send(*keys)
        self.wait(done)
        return time.perf_counter() - t0

    def close(self) -> None:
        self.send("q")
        time.sleep(0.5)
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def execmode(*args: str, env: str = "") -> str:
    python = sys.executable
    return f"cd {ROOT} && {env} {python} -m execmode {' '.join(args)}"


def launch_to_first_pause(session_dir: Path, env: str = "") -> tuple[float, float]:
    """Seconds to the status bar's first pause, and to the whole paused screen."""
    term = Terminal(execmode("tui", "examples/nan_hunt.py",
                             env=f"{env} EXECMODE_SESSION_DIR={session_dir}"))
    term.wait(lambda s: "paused at op 1 " in s)
    paused = time.perf_counter() - term.started
    term.wait(lambda s: "▶   25" in s and re.search(r"│\s+n 64\s", s))  # source, Variables
    complete = time.perf_counter() - term.started
    term.close()
    return paused, complete


def launches(tmp: Path, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Launch times as Python runs here and with a warm bytecode cache, interleaved (the
    machine's load drifts)."""
    cached = f"PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX={tmp / 'pycache'}"
    launch_to_first_pause(tmp / "sessions", cached)  # fills the cache (not timed)
    out: dict[str, list[tuple[float, float]]] = {"as run here": [], "bytecode cache": []}
    for _ in range(rounds):
        out["as run here"].append(launch_to_first_pause(tmp / "sessions"))
        out["bytecode cache"].append(launch_to_first_pause(tmp / "sessions", cached))
    return out


def detail(screen: str) -> str:
    """The op-detail line (the selected op in full): it changes with the cursor."""
    return next((line for line in screen.splitlines() if re.search(r"│op \d+: ", line)), "")


def keys_and_views(path: Path, presses: int, ops: int) -> dict:
    term = Terminal(execmode("open", str(path)))
    term.wait(lambda s: f"ops · {ops:,}" in s and not LOADING.search(s) and detail(s))
    out: dict = {"keys": [], "views": {}}
    cycle = ["Home", "Down", "NPage", "Down", "End", "Up", "PPage", "NPage"]  # each moves
    for i in range(presses):
        before = detail(term.screen())
        out["keys"].append(term.timed([cycle[i % len(cycle)]], lambda s, b=before: detail(s)
                                      and detail(s) != b and not LOADING.search(s)))
    term.send("/")
    term.wait(lambda s: "op, scope or file:line" in s)
    term.send("relu sort:time")
    term.wait(lambda s: "relu sort:time" in s)
    out["search"] = term.timed(["Enter"], lambda s: re.search(r"ops · [\d,]+ of ", s)
                               and not LOADING.search(s))
    for _round in range(2):
        for key in [*"23456789", "1"]:
            out["views"].setdefault(key, []).append(
                term.timed([key], lambda s, k=key: LOADED[k] in s and not LOADING.search(s)
                           and (k != "7" or "relu" in s)))
    term.close()
    return out


def open_big(path: Path, ops: int) -> float:
    term = Terminal(execmode("open", str(path)))
    term.wait(lambda s: re.search(rf"^│\s*{ops}  ", s, re.MULTILINE), timeout=60)
    elapsed = time.perf_counter() - term.started
    term.close()
    return elapsed


def verdict(value: float, goal: float) -> str:
    return f"{value * 1e3:8.1f} ms   goal <= {goal * 1e3:.0f} ms   " + \
        ("ok" if value <= goal else "OVER")


def report_launches(launched: dict[str, list[tuple[float, float]]]) -> None:
    print("\nlaunch -> first pause (nan_hunt.py): best, median; the complete screen after")
    for kind, times in launched.items():
        paused = sorted(t[0] for t in times)
        complete = sorted(t[1] for t in times)
        print(f"  {kind:15s} best {verdict(paused[0], GOALS['launch'])}  "
              f"median {statistics.median(paused) * 1e3:.0f} ms; complete: best "
              f"{complete[0] * 1e3:.0f} ms, median {statistics.median(complete) * 1e3:.0f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", type=int, default=100_000)
    p.add_argument("--presses", type=int, default=60)
    p.add_argument("--big", type=int, default=1_000_000)
    p.add_argument("--launches", type=int, default=5, help="launches of each kind")
    p.add_argument("--launch-only", action="store_true", help="measure the launch only")
    args = p.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("this benchmark reads the screen through tmux: install tmux")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        loads = [os.getloadavg()[0]]
        launched = launches(tmp, args.launches)
        loads.append(os.getloadavg()[0])
        print(f"load average {min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} CPUs "
              f"during the launches; PYTHONDONTWRITEBYTECODE="
              f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r} here", flush=True)
        report_launches(launched)
        if args.launch_only:
            return
        print(f"building sessions of {args.ops:,} and {args.big:,} ops…", flush=True)
        session = build_big_session(tmp / "ops.emsession", ops=args.ops)
        big = build_big_session(tmp / "big.emsession", ops=args.big)
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
        measured = keys_and_views(session, args.presses, args.ops)
        opened = min(open_big(big, args.big) for _ in range(2))

    keys = sorted(measured["keys"])
    p95 = keys[max(0, round(0.95 * len(keys)) - 1)]
    print(f"key -> repaint, {args.ops:,}-op session, {len(keys)} presses: "
          f"p50 {statistics.median(keys) * 1e3:.1f} ms, max {keys[-1] * 1e3:.1f} ms")
    print(f"  p95                                        {verdict(p95, GOALS['key_p95'])}")
    print(f"search: Enter on '/relu sort:time' -> result  {measured['search'] * 1e3:8.1f} ms")
    print("view switch: first opening (composes the view) / again")
    worst = 0.0
    for key, times in measured["views"].items():
        worst = max(worst, times[-1])
        print(f"  {key}  {times[0] * 1e3:7.1f} ms / {times[-1] * 1e3:7.1f} ms")
    print(f"  worst, once composed                       {verdict(worst, GOALS['view_switch'])}")
    print(f"open a {args.big:,}-op session, best of 2 {verdict(opened, GOALS['open_big'])}")


if __name__ == "__main__":
    main()
