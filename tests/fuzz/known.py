"""Minimized repros of the mismatch classes the fuzzer found (filled in below)."""

KNOWN_MISMATCHES: dict[str, str] = {}
