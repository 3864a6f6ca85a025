"""execmode execmode/passes."""
