"""execmode profilers/exporters."""
