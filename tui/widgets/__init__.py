"""execmode tui/widgets."""
