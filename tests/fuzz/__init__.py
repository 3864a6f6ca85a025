"""Differential fuzzing of eager mode against ``em.jit`` on random stateful programs."""
