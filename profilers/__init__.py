"""execmode profilers."""
