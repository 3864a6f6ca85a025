"""execmode execmode/graph."""
