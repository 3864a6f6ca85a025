"""execmode tui/screens."""
