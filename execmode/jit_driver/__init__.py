"""The jit driver: ``em.jit``, the top of the graph-mode pipeline.

It traces a function (graph/), optimizes the graph (passes/), generates kernels
(codegen/), plans their memory and order (plan.py) and runs the plan, caching one compiled
program per signature behind guards. Not called ``execmode/jit/``: that package name would
collide with the function ``em.jit`` on the ``execmode`` package.
"""
