"""Where the script is: the records the status bar and the Ops view show.

Built from the controller's events (``paused``, ``exited``) so that views read typed
fields instead of the protocol's dictionaries.
"""

from __future__ import annotations

from typing import NamedTuple

from execmode.tui.records import SourceRef


class PausedInfo(NamedTuple):
    """The agent stopped: why, where, and the op (or fused kernel) it stopped at."""

    reason: str
    when: str                    # before | after | break | exception
    mode: str                    # eager | graph
    op_index: int
    kernel_index: int
    op: str | None
    location: SourceRef | None
    stack: tuple[SourceRef, ...]  # innermost first
    scope: str
    inputs: tuple[dict, ...]     # tensor summaries ({"scalar": text} for Python numbers)
    output: dict | None
    kernel: dict | None          # graph mode: name, kind, members, source, ...
    breakpoint: dict | None
    hunt: dict | None            # where a NaN/Inf came from
    traceback: str | None
    member: dict | None = None   # stepped into a fused kernel: the member op paused before

    @classmethod
    def from_event(cls, data: dict) -> PausedInfo:
        stack = tuple(s for s in (SourceRef.from_json(f) for f in data.get("stack") or ())
                      if s is not None)
        return cls(
            reason=str(data.get("reason") or ""), when=str(data.get("when") or "before"),
            mode=str(data.get("mode") or "eager"), op_index=int(data.get("op_index") or 0),
            kernel_index=int(data.get("kernel_index") or 0), op=data.get("op"),
            location=SourceRef.from_json(data.get("location")), stack=stack,
            scope=str(data.get("scope") or ""), inputs=tuple(data.get("inputs") or ()),
            output=data.get("output"), kernel=data.get("kernel"),
            breakpoint=data.get("breakpoint"), hunt=data.get("hunt"),
            traceback=data.get("traceback"), member=data.get("member"),
        )

    @property
    def what(self) -> str:
        """"matmul", "kernel k0 (maximum multiply add)" or, stepped into it, "%3 relu
        (1/3 in kernel k0)"."""
        if self.member:
            m = self.member
            return (f"%{m.get('id')} {m.get('op')} ({m.get('index', 0) + 1}/{m.get('count')} "
                    f"in kernel {m.get('kernel')})")
        if self.kernel:
            ops = " ".join(self.kernel.get("member_ops") or ())
            return f"kernel {self.kernel.get('name', '?')} ({ops})"
        return self.op or "?"

    @property
    def origin(self) -> SourceRef | None:
        """The line where a NaN/Inf hunt found the first non-finite value, if it found one:
        the answer to a NaN breakpoint (the kernel's own line is only where it showed)."""
        found = (self.hunt or {}).get("origin") or {}
        return SourceRef.from_json(found.get("location"))

    @property
    def where(self) -> SourceRef | None:
        """The innermost user line: the paused location, else the top of the stack."""
        if self.location is not None:
            return self.location
        return self.stack[0] if self.stack else None


class ExitSummary(NamedTuple):
    status: str                  # ok | exit | exception | quit | killed | crashed | vanished
    code: int | None
    description: str
    traceback: str | None = None

    @classmethod
    def from_event(cls, data: dict) -> ExitSummary:
        return cls(str(data.get("status") or "vanished"), data.get("code"),
                   str(data.get("description") or ""), data.get("traceback"))

    @property
    def failed(self) -> bool:
        return self.status in ("exception", "killed", "crashed", "vanished") or \
            (self.status == "exit" and bool(self.code))


class RunState(NamedTuple):
    """What the status bar says. ``phase`` is one of:

    starting, running, paused, finished, failed (could not start), restarting,
    post-mortem (a recorded session, no script attached).
    """

    phase: str
    paused: PausedInfo | None = None
    exit: ExitSummary | None = None
    message: str = ""
    mode: str = "eager"

    @property
    def can_step(self) -> bool:
        return self.phase == "paused"

    @property
    def live(self) -> bool:
        return self.phase in ("starting", "running", "paused", "restarting")


STARTING = RunState("starting")
