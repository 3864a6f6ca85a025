"""Composites that ran op by op because someone watched, counted by call site.

A composite (``nn.functional.linear``, a reshape's view, a reduction, backward's gradient
accumulation ...) computes on NumPy at once when nobody watches (dispatch.plain_arrays);
with a listener it runs its ops one by one through dispatch, so that each is seen. That
path costs more than the recorder's own work on those ops (dispatch's general path, the
function API's checks, a tensor per intermediate value): part of what recording costs a
script. A recorder takes the counts of its
session (profilers/recorder.py) and states their cost from the calibration's cost per
call of each site (profilers/calibration_declined.py).

Counted where plain_arrays declines with a listener attached and no trace running (a
trace declines for its own reasons: while any thread traces, nothing is counted). A site
is its caller's code object: the composite itself, named ``module:qualname`` only when
read. Threads count without a lock: a race may lose a count, never make one up.
"""

from __future__ import annotations

declined: dict = {}  # the caller's code object -> calls that took the op path
# Whether some composite's result was marked (mark_backward) while a listener was
# attached: otherwise backward does not look for marks (dispatch clears it when the last
# listener goes, and nobody counts).
marked = False


def count(code, calls: int = 1) -> None:
    declined[code] = declined.get(code, 0) + calls


def mark_backward(t, code) -> None:
    """``t`` came from a composite that records one autograd node unwatched
    (nn/one_node.py) but ran its ops for a listener: backward, reaching it, counts a call
    at ``code``'s site (the node's own backward, which the ops' vjps replaced). Counted
    apart from the forward because a script may run the forward alone."""
    global marked
    t.__dict__["_declined_backward"] = code
    marked = True


def count_backward(t) -> None:
    """Backward reached ``t``: its mark's site, if it has one, counts a call."""
    code = t.__dict__.get("_declined_backward")
    if code is not None:
        count(code)


def site_name(code) -> str:
    module = code.co_filename.replace("\\", "/").rsplit("/execmode/", 1)[-1]
    return f"{module.removesuffix('.py')}:{getattr(code, 'co_qualname', code.co_name)}"


def counts() -> dict:
    """{site name: calls} so far in this process (copied: other threads go on counting)."""
    named: dict = {}
    for code, n in list(declined.items()):
        name = site_name(code)
        named[name] = named.get(name, 0) + n
    return named


def since(before: dict) -> dict:
    """The calls of each site since ``before`` (a :func:`counts`), sites with none left out."""
    return {name: n - before.get(name, 0) for name, n in counts().items()
            if n > before.get(name, 0)}
