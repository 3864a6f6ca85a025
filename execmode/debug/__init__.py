"""execmode execmode/debug."""
