"""A view's bytes are labelled as a view's: the Tensor view shows the base it shares, not
the expanded element count as if it had been allocated."""

from __future__ import annotations

import numpy as np
import pytest
from execmode.tui import panels
from rich.console import Console

import execmode as em
from execmode.debug.summary import summarize


def _table_text(summary: dict) -> str:
    console = Console(width=100, record=True)
    console.print(panels.tensor_table(summary))
    return console.export_text()


def test_an_expanded_view_shares_its_base():
    base = em.ones(512, 512)
    view = base.expand(3000, 512, 512)
    s = summarize(view._data)
    assert s["nbytes"] == 3000 * 512 * 512 * 4 and s["base_nbytes"] == 512 * 512 * 4
    text = _table_text(s)
    assert "a view of a 1 MiB base (shared)" in text and "GiB" not in text


def test_a_view_of_a_view_names_the_buffers_owner():
    owner = np.zeros(1000, np.float32)
    assert summarize(owner[10:20][::2])["base_nbytes"] == 4000


def test_an_array_with_its_own_buffer_shows_its_size():
    s = summarize(np.zeros((256, 1024), np.float32))
    assert "base_nbytes" not in s
    text = _table_text(s)
    assert "memory" in text and "1 MiB" in text and "view" not in text


@pytest.mark.parametrize("shape, to", [((1, 5), (7, 5)), ((3, 1, 4), (3, 6, 4)),
                                       ((1, 1), (4, 9)), ((2,), (3, 2))])
def test_a_broadcast_views_statistics_are_its_copys(shape, to):
    """A broadcast view's summary is read from one copy of its elements (counts scaled):
    the same numbers as the summary of the materialized array."""
    base = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 3.5
    base.reshape(-1)[0] = np.nan
    base.reshape(-1)[-1] = -np.inf
    view = np.broadcast_to(base, to)
    got, want = summarize(view, histogram=True), summarize(np.array(view), histogram=True)
    for key in ("nan_count", "inf_count", "min", "max", "mean", "std", "abs_max", "size"):
        assert got[key] == pytest.approx(want[key]), key
    assert got["histogram"] == want["histogram"]
