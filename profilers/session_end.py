"""How a recorded script ended: the one record every runner writes and every reader shows.

A session's end is one of these kinds:

============ =============================================================================
finished     the script ran to its end (or called ``sys.exit(0)``)
exited       ``sys.exit(N)`` with N other than 0
raised       an exception ended it: its type, message and the user's line that raised
interrupted  Ctrl-C (KeyboardInterrupt)
breakpoint   the debugger stopped it at a breakpoint (which one, where) and it was quit
             there; ``evidence`` is what the stop found (a NaN/Inf's first op and line)
stopped      the debugger stopped it elsewhere (paused at a step, or while running)
killed       a signal ended it: SIGTERM/SIGHUP (lifeline.py turns them into a clean end,
             the script closes its session) or SIGKILL (its starter writes the end)
crashed      its process died without closing the session (a segfault, ``os._exit``):
             written by the process that started it, which saw how it died
unknown      nothing says how: no end stamp and nobody wrote one (the process was killed
             or crashed with no execmode parent watching), or an older recording
recording    no end yet, and the writing process is alive
============ =============================================================================

Writers: ``profilers/runner.py`` (``execmode profile``), the debugger's agent
(``execmode run``, the TUI), ``em.profile`` (``profilers/api.py``), and the starters of a
script that died without closing (:func:`record_unclosed`). The record is meta ``end``;
meta ``exit`` (the process's view, with the traceback) is still written beside it, so
that readers older than ``end`` keep showing what they showed. Readers
(:func:`from_meta`) take ``end``, else translate an older ``exit``, else infer from the
end stamp and the writer's pid: a missing record never reads as "finished".

Text from the script (an exception message, a breakpoint's spec) is data here: it is
stored as JSON strings and shown as text, never evaluated.
"""

from __future__ import annotations

import os
import signal
import sqlite3
from dataclasses import asdict, dataclass, fields

KINDS = ("finished", "exited", "raised", "interrupted", "breakpoint", "stopped", "killed",
         "crashed", "unknown", "recording")
# Ends whose session the script's own process could not close: its starter wrote them.
UNCLOSED = ("killed", "crashed")
# The starter writes this as closed_by; the script's own process writes "script".
BY_STARTER = "the process that started the script"

_NO_END = "the recording process ended without closing the session (killed or crashed)"
_NOT_SAID = "the recording was closed without saying how the code ended (an older file?)"


@dataclass(frozen=True)
class SessionEnd:
    """One session's end. Every field but ``kind`` is optional (None: not known)."""

    kind: str
    code: int | None = None         # the exit status of the script's process
    error: str | None = None        # the exception's type: "ValueError"
    message: str | None = None      # its first line: "ValueError: bad value 3.0"
    file: str | None = None         # where it ended: the raise, the stop, the signal
    line: int | None = None
    function: str | None = None
    signal: str | None = None       # "SIGKILL"
    reason: str | None = None       # why, in words ("paused: step", lifeline's reason)
    breakpoint: dict | None = None  # {"id": 1, "spec": "nan"}
    at: str | None = None           # what it was stopped at: "after kernel k7", "before op log"
    evidence: dict | None = None    # what the stop found: {text, op, node, file, line, ...}
    closed_by: str | None = None    # "script", or BY_STARTER

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict) -> SessionEnd:
        """Tolerant: a field of the wrong type is dropped, an unknown kind is "unknown"
        (a file written by a newer execmode, or edited by hand)."""
        clean = {}
        for name, value in data.items():
            wanted = _FIELD_TYPES.get(name)
            if wanted is not None and isinstance(value, wanted) and \
                    not (wanted is int and isinstance(value, bool)):
                clean[name] = value
        kind = clean.pop("kind", None)
        if kind not in KINDS:
            clean.setdefault("reason", f"an end this execmode does not know: {kind!r}")
            kind = "unknown"
        return cls(kind, **clean)

    # --- words ------------------------------------------------------------------------
    @property
    def failed(self) -> bool:
        """An end that is not the script's own success (what a list marks in red)."""
        return self.kind not in ("finished", "recording") and \
            not (self.kind == "exited" and not self.code)

    def text(self) -> str:
        """One line: "raised ValueError at train.py:12", "stopped at breakpoint 1 (nan)
        after kernel k7 at nan_hunt.py:48; origin: log at nan_hunt.py:35"."""
        return _TEXT[self.kind](self)

    def details(self) -> list[str]:
        """Longer sentences for a report's notes: the exception's message, the stop's
        evidence in full, whether the session was closed."""
        out = []
        if self.message and self.kind in ("raised", "interrupted"):
            out.append(f"The script raised {self.message}{_where(self, full=True)}.")
        if self.evidence and self.evidence.get("text"):
            where = _place(self.evidence, full=True).removeprefix(" at ")
            if where and self.evidence.get("function"):
                where += f" in {self.evidence['function']}"
            out.append(f"What the stop found: {self.evidence['text']}"
                       + (f" ({where})" if where else "") + ".")
        if self.closed_by == BY_STARTER:
            out.append("The script's process died without closing the session; the "
                       "process that started it wrote how it ended. Everything up to the "
                       "last flush (at most ~0.1 s before the end) is here.")
        return out


_FIELD_TYPES = {f.name: str for f in fields(SessionEnd)} | {
    "code": int, "line": int, "breakpoint": dict, "evidence": dict}


def _place(d, full: bool = False) -> str:
    """" at train.py:12" from a dict or SessionEnd with file/line, else ""."""
    get = d.get if isinstance(d, dict) else lambda k: getattr(d, k, None)
    file, line = get("file"), get("line")
    if not file:
        return ""
    name = str(file) if full else os.path.basename(str(file))
    return f" at {name}:{line}" if line is not None else f" at {name}"


def _where(end: SessionEnd, full: bool = False) -> str:
    return _place(end, full)


def _breakpoint_words(end: SessionEnd) -> str:
    bp = end.breakpoint or {}
    spec = bp.get("spec")
    if bp.get("id") is None:
        return str(spec or "a breakpoint")
    return f"breakpoint {bp['id']}" + (f" ({spec})" if spec else "")


def _origin_words(evidence: dict | None) -> str:
    if not evidence:
        return ""
    if evidence.get("op") and evidence.get("file"):
        return f"; origin: {evidence['op']}{_place(evidence)}"
    text = evidence.get("text")
    return f"; origin: {text}" if text else ""


def _finished(e: SessionEnd) -> str:
    return "finished"


def _exited(e: SessionEnd) -> str:
    return f"exited with sys.exit({e.code})" + _where(e)


def _raised(e: SessionEnd) -> str:
    return f"raised {e.error or e.message or 'an exception'}" + _where(e)


def _interrupted(e: SessionEnd) -> str:
    return "interrupted (Ctrl-C)" + _where(e)


def _at_breakpoint(e: SessionEnd) -> str:
    at = f" {e.at}" if e.at else ""
    return f"stopped at {_breakpoint_words(e)}{at}{_where(e)}{_origin_words(e.evidence)}"


def _stopped(e: SessionEnd) -> str:
    how = f" ({e.reason})" if e.reason else ""
    return f"stopped in the debugger{how}{_where(e)}"


def _killed(e: SessionEnd) -> str:
    if e.signal:
        text = f"killed by {e.signal}{_where(e)}"
    else:
        text = f"killed: {e.reason or 'by a signal'}{_where(e)}"
    if e.breakpoint:
        text += f", while stopped at {_breakpoint_words(e)}"
    return text + (" (not closed: rows up to the last flush)" if e.closed_by == BY_STARTER
                   else "")


def _crashed(e: SessionEnd) -> str:
    if e.signal:
        return f"crashed with {e.signal} (not closed: rows up to the last flush)"
    return (f"crashed: ended with exit status {e.code} without closing the session "
            f"(os._exit({e.code}), or the interpreter died): rows up to the last flush")


def _unknown(e: SessionEnd) -> str:
    return f"unknown: {e.reason or _NO_END}"


def _recording(e: SessionEnd) -> str:
    return "recording"


_TEXT = {"finished": _finished, "exited": _exited, "raised": _raised,
         "interrupted": _interrupted, "breakpoint": _at_breakpoint, "stopped": _stopped,
         "killed": _killed, "crashed": _crashed, "unknown": _unknown,
         "recording": _recording}


# --- writing ------------------------------------------------------------------------------
def from_script_exit(result, stop: dict | None = None) -> SessionEnd:
    """The end of a script that ``execmode.script_runner.run_script`` ran (``result``, its
    ``ScriptExit``). ``stop`` is where the debugger held the script when it ended
    (:func:`stop_record`), or None."""
    kind, code = result.kind, result.code
    place = {"file": result.file, "line": result.line}
    if kind == "normal" or (kind == "exit" and code == 0):
        return SessionEnd("finished", code, closed_by="script")
    if kind == "exit":
        return SessionEnd("exited", code, message=result.exception, closed_by="script",
                          **place)
    if kind in ("exception", "interrupted"):
        error = type(result.error).__name__ if result.error is not None else None
        held = (stop or {}).get("breakpoint")
        return SessionEnd("raised" if kind == "exception" else "interrupted", code,
                          error=error, message=_first_line(result.exception),
                          breakpoint=held, closed_by="script", **place)
    if kind == "terminated":
        signum = getattr(result.error, "signum", None)
        by_signal = signum is not None and not getattr(result.error, "parent_gone", False)
        name = _signal_name(signum) if by_signal else None
        return SessionEnd("killed", code, signal=name, reason=result.exception,
                          breakpoint=(stop or {}).get("breakpoint"), closed_by="script",
                          **place)
    if kind == "quit":
        return _quit_end(code, stop, place)
    return SessionEnd("unknown", code, reason=f"the runner reported {kind!r}",
                      closed_by="script")


def _quit_end(code, stop: dict | None, place: dict) -> SessionEnd:
    if not stop:
        return SessionEnd("stopped", code, reason="while running", closed_by="script",
                          **place)
    loc = stop.get("location") or {}
    where = {"file": loc.get("filename"), "line": loc.get("lineno"),
             "function": loc.get("function")}
    if stop.get("breakpoint"):
        return SessionEnd("breakpoint", code, breakpoint=stop["breakpoint"],
                          at=stop.get("at"), evidence=stop.get("evidence"),
                          closed_by="script", **where)
    return SessionEnd("stopped", code, reason=f"paused: {stop.get('reason')}",
                      at=stop.get("at"), closed_by="script", **where)


def stop_record(reason: str, when: str, *, breakpoint: dict | None = None,
                op: str | None = None, kernel: str | None = None,
                location: dict | None = None, hunt: dict | None = None) -> dict:
    """Where the debugger holds the script, as :func:`from_script_exit` wants it: the
    breakpoint (id and spec), what it stopped before or after, the line, and the NaN/Inf
    hunt's finding (debug/hunt.py) as evidence."""
    if kernel:
        at = f"{when} kernel {kernel}"
    elif op:
        at = f"{when} op {op}"
    else:
        at = None
    held = None
    if breakpoint is not None:
        held = {"id": breakpoint.get("id"), "spec": breakpoint.get("spec")}
    return {"reason": reason, "breakpoint": held, "at": at, "location": location,
            "evidence": evidence_of(hunt)}


def evidence_of(hunt: dict | None) -> dict | None:
    """The part of a NaN/Inf hunt's report (debug/hunt.py) a session keeps: its sentence,
    the first op that made a non-finite value and its line, or the pass or kernel that
    introduced it."""
    if not hunt or not hunt.get("text"):
        return None
    origin = hunt.get("origin") or {}
    loc = origin.get("location") or {}
    evidence = {"text": hunt["text"], "op": origin.get("op"), "node": origin.get("node"),
                "file": loc.get("filename"), "line": loc.get("lineno"),
                "function": loc.get("function"),
                "pass": hunt.get("introduced_by_pass"),
                "kernel": hunt.get("introduced_by_kernel")}
    return {k: v for k, v in evidence.items() if v is not None}


def record(set_meta, result, end: SessionEnd) -> None:
    """Write ``end`` (meta ``end``) and the script's exit as older readers know it (meta
    ``exit``: kind, code, exception, traceback, file, line)."""
    set_meta("exit", result.to_json())
    set_meta("end", end.to_json())


def from_returncode(returncode: int) -> SessionEnd:
    """The end of a script whose process died without closing its session, from Popen's
    return code (negative: the signal that killed it)."""
    if returncode < 0:
        sig = -returncode
        killed = sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        return SessionEnd("killed" if killed else "crashed", 128 + sig,
                          signal=_signal_name(sig), closed_by=BY_STARTER)
    return SessionEnd("crashed", returncode, closed_by=BY_STARTER)


def record_unclosed(path, returncode: int) -> SessionEnd | None:
    """Write how the script's process ended into a session it left open (a segfault, a
    SIGKILL, ``os._exit``), so that ``sessions``, ``report`` and ``open`` can say it. The
    writer is dead, so this is the only writer; SQLite recovers its WAL on open. Returns
    the end written, or None when the session was closed after all (it said how it ended)
    or cannot be opened for writing (it stays as it is: readers say "unknown")."""
    from execmode.profilers import store

    if not isinstance(returncode, int):
        return None
    end = from_returncode(returncode)
    try:
        written = store.stamp_unclosed(path, {"end": end.to_json(), "exit": _older_exit(end)})
    except sqlite3.Error:
        return None
    return end if written else None


def _older_exit(end: SessionEnd) -> dict:
    # meta "exit" as execmode wrote it for an unclosed session before "end" existed.
    kind = "vanished" if end.kind == "crashed" and end.signal is None else end.kind
    out = {"kind": kind, "code": end.code, "closed_by": BY_STARTER}
    if end.signal:
        out["signal"] = end.signal
    return out


# --- reading ------------------------------------------------------------------------------
def from_meta(meta: dict, writer_alive: bool | None = None) -> SessionEnd:
    """A session's end from its meta: ``end``, else an older ``exit``, else inferred
    (``writer_alive``: the recording process is still running; None: ask the system)."""
    end = meta.get("end")
    if isinstance(end, dict):
        return SessionEnd.from_json(end)
    exit_ = meta.get("exit")
    if isinstance(exit_, dict):
        return from_older_exit(exit_)
    if "end_ns" in meta:
        return SessionEnd("unknown", reason=_NOT_SAID)
    if writer_alive is None:
        writer_alive = writer_is_alive(meta)
    if writer_alive:
        return SessionEnd("recording")
    return SessionEnd("unknown", reason=_NO_END)


def writer_is_alive(meta: dict) -> bool:
    """Whether the process that writes the session (meta "writer": pid and host) runs."""
    import platform

    writer = meta.get("writer") if isinstance(meta.get("writer"), dict) else {}
    pid, host = writer.get("pid"), writer.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or host != platform.node():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    except OSError:
        return False
    return True


def from_older_exit(exit_: dict) -> SessionEnd:
    """Meta ``exit`` as execmode wrote it before ``end`` (and still writes it beside)."""
    kind, code = exit_.get("kind"), exit_.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    text = exit_.get("exception") if isinstance(exit_.get("exception"), str) else None
    place = {"file": exit_.get("file") if isinstance(exit_.get("file"), str) else None,
             "line": exit_.get("line") if isinstance(exit_.get("line"), int) else None}
    sig = exit_.get("signal") if isinstance(exit_.get("signal"), str) else None
    by = BY_STARTER if exit_.get("closed_by") else None
    if kind in ("normal", "ok") or (kind == "exit" and not code):
        return SessionEnd("finished", code)
    if kind == "exit":
        return SessionEnd("exited", code, message=text, **place)
    if kind in ("exception", "interrupted"):
        first = _first_line(text)
        error = first.split(":", 1)[0].rsplit(".", 1)[-1] if first else None
        return SessionEnd("raised" if kind == "exception" else "interrupted", code,
                          error=error, message=first, **place)
    if kind == "terminated":
        return SessionEnd("killed", code, signal=_signal_of_code(code), reason=text)
    if kind == "quit":
        return SessionEnd("stopped", code, reason="the file does not say where")
    if kind == "killed":
        return SessionEnd("killed", code, signal=sig, closed_by=by)
    if kind in ("crashed", "vanished"):
        return SessionEnd("crashed", code, signal=sig, closed_by=by)
    return SessionEnd("unknown", code, reason=f"an exit this execmode does not know: "
                                              f"{kind!r}")


# --- helpers ------------------------------------------------------------------------------
def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    return text.strip().splitlines()[0] if text.strip() else None


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _signal_of_code(code: int | None) -> str | None:
    if isinstance(code, int) and code > 128:
        return _signal_name(code - 128)
    return None
