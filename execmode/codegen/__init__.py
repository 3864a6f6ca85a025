"""execmode execmode/codegen."""
