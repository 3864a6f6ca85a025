"""The one error the profilers raise for bad session files and bad export requests."""

from __future__ import annotations


class SessionError(Exception):
    """A session file that cannot be read (missing, truncated, foreign, newer schema), or a
    request the session cannot answer. The message says what is wrong and what to do."""
