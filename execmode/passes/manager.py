"""The pass manager (placeholder pipeline until the passes land): identity."""

from __future__ import annotations


def run_passes(graph, passes=None):
    return graph, None
