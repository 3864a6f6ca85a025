"""What the op history is narrowed to: a search, filters and a sort order.

The Ops view's `/` bar reads and writes one line of text, so a query is typed, edited and
shown the same way::

    matmul                      op, scope or file containing "matmul"
    #57  (or op:57)             op 57 (the kernel list: kernel run 57), as numbered everywhere
    train.py:42                 ops of that line
    scope:mlp/fc1 nonfinite     ops in that scope whose output holds a NaN or Inf
    graph:step#1:0 sort:time    kernels of one graph, slowest first

A query is plain data; :mod:`execmode.tui.data` turns it into SQL, so a million-row
session is searched and sorted by SQLite, never row by row in Python.
"""

from __future__ import annotations

import re
from typing import NamedTuple

SORTS = ("seq", "time", "bytes")  # seq: the order the ops ran; time/bytes: largest first
SORT_LABEL = {"seq": "in order", "time": "slowest first", "bytes": "most bytes first"}
_LOCATION = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+)$")
_NUMBER = re.compile(r"^#(?P<number>\d+)$")


class OpQuery(NamedTuple):
    words: tuple[str, ...] = ()   # each must match the op, its scope or its file
    locations: tuple[tuple[str, int], ...] = ()   # (file suffix, line) pairs: any of them
    scope: str = ""               # the scope, or a scope under it
    graph: str = ""               # kernels of this graph id (prefix)
    nonfinite: bool = False       # outputs with a NaN or an Inf (needs value summaries)
    sort: str = "seq"
    numbers: tuple[int, ...] = ()  # op numbers (kernel run numbers): any of them

    @property
    def active(self) -> bool:
        """Whether the list differs from the plain history."""
        return self != NO_QUERY

    def with_(self, **changes) -> OpQuery:
        return self._replace(**changes)

    def next_sort(self) -> OpQuery:
        return self._replace(sort=SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)])

    def to_text(self) -> str:
        """The query as the `/` bar shows it (parse(to_text()) gives it back)."""
        parts = list(self.words)
        parts += [f"#{n}" for n in self.numbers]
        parts += [f"{f}:{line}" for f, line in self.locations]
        if self.scope:
            parts.append(f"scope:{self.scope}")
        if self.graph:
            parts.append(f"graph:{self.graph}")
        if self.nonfinite:
            parts.append("nonfinite")
        if self.sort != "seq":
            parts.append(f"sort:{self.sort}")
        return " ".join(parts)

    def describe(self) -> str:
        """A short sentence for the list's title."""
        bits = []
        text = " ".join([*self.words, *(f"#{n}" for n in self.numbers),
                         *(f"{f}:{n}" for f, n in self.locations)])
        if text:
            bits.append(f"“{text}”")
        if self.scope:
            bits.append(f"scope {self.scope}")
        if self.graph:
            bits.append(f"graph {self.graph}")
        if self.nonfinite:
            bits.append("NaN/Inf only")
        if self.sort != "seq":
            bits.append(SORT_LABEL[self.sort])
        return " · ".join(bits)


NO_QUERY = OpQuery()


class QueryError(ValueError):
    """A token the `/` bar does not understand (the message names it)."""


def parse(text: str) -> OpQuery:
    """The query a line of `/` text asks for; unknown ``key:`` tokens are refused."""
    words, locations, numbers = [], [], []
    fields = {"scope": "", "graph": "", "sort": "seq"}
    nonfinite = False
    for token in text.split():
        low = token.lower()
        if low in ("nonfinite", "nan", "inf", "!"):
            nonfinite = True
            continue
        key, sep, value = token.partition(":")
        if key.lower() == "op" and value.isdigit():  # op:57, as the Tensor view spells it
            numbers.append(int(value))
            continue
        if sep and key.lower() in fields:
            if not value:
                raise QueryError(f"{token}: say what follows ‘{key}:’")
            if key.lower() == "sort" and value.lower() not in SORTS:
                raise QueryError(f"{token}: sort by one of {', '.join(SORTS)}")
            fields[key.lower()] = value.lower() if key.lower() == "sort" else value
            continue
        number = _NUMBER.match(token)
        m = _LOCATION.match(token)
        if number:
            numbers.append(int(number["number"]))
        elif m:
            locations.append((m["file"], int(m["line"])))
        else:
            words.append(token)
    return OpQuery(tuple(words), tuple(locations), fields["scope"], fields["graph"],
                   nonfinite, fields["sort"], tuple(numbers))
