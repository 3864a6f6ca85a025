"""execmode tui."""
