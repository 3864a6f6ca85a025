"""``execmode explain SCRIPT [ARGS...]``: run a script and report what graph mode made of
every jitted function in it: graphs per signature, graph breaks with reasons and source
lines, baked values, retraces with reasons. The script runs as usual, side effects and
all; to explain one function without running it, call ``em.explain(fn, *args)``."""

from __future__ import annotations

from ..cli_args import Command, add_script_argument, parse_script_command, require_script


class ExplainCommand(Command):
    name = "explain"
    help = "report graph breaks and retraces of a script's jitted functions"
    description = __doc__.split("\n\n")[0]

    def prepare_parser(self, p) -> None:
        p.add_argument("--on-break", choices=("split", "error", "bake"), metavar="MODE",
                       help="what every em.jit in the script does where Python needs a "
                            "concrete value, as if given on_break=MODE: split (break the graph "
                            "there), error (raise, like fullgraph=True) or bake (freeze the "
                            "value seen while tracing, as torch.jit.trace does; listed as "
                            "baked). Default: each em.jit's own choice")
        add_script_argument(p)

    def run(self, args) -> int:
        return explain_command(args)


EXPLAIN = ExplainCommand()


def explain_command(opts) -> int:
    parse_script_command(opts.parser, opts)
    require_script(opts.parser, opts)
    from ..script_runner import run_script
    from .jit import override_on_break
    from .registry import all_jit_functions, keep_jit_functions

    # The script's own failure is printed and still explained: what ran, ran under jit.
    # Every em.jit the script made is reported, also those it dropped before the end.
    override_on_break(opts.on_break)
    try:
        with keep_jit_functions():
            code = run_script(opts.script, opts.args).code
            functions = all_jit_functions()
    finally:
        override_on_break(None)
    print(format_report(functions))
    return code


def format_report(functions) -> str:
    from ..ops import OPS
    from .explain import backward_lines

    lines = ["", "execmode explain", "================"]
    if not functions:
        lines.append("no jitted functions ran (use em.jit to get graph mode)")
        return "\n".join(lines)
    for f in functions:
        cfs = f.concrete_functions
        lines.append(f"\n{f.name}: {len(cfs)} signature(s), traced {f.trace_count} time(s), "
                     f"compiled {f.compile_count} segment(s)")
        for cf in cfs:
            graphs = cf.graphs
            lines.append(f"  {cf.signature}: {len(graphs)} graph(s), {len(cf.breaks)} "
                         f"break(s), ops per graph "
                         + ", ".join(str(len(g.op_nodes)) for g in graphs))
            for g in graphs:
                collectives = [_collective_text(n) for n in g.nodes
                               if n.op in OPS and OPS[n.op].collective]
                if collectives:  # (graph_ops.py: never merged, dropped or reordered)
                    lines.append(f"    collectives in {g.name}, in the order every rank runs "
                                 f"them (the general replay runs its steps): "
                                 f"{', '.join(collectives)}")
            for b in cf.breaks:
                lines.append(f"    break: {b.reason} (op {b.op})")
                lines.append(f"      at {b.filename}:{b.lineno} in {b.function}")
            for w in cf.python_writes:
                lines.append(f"    writes Python state (its Python runs at every call): {w}")
            for b in getattr(cf, "baked", ()):
                lines.append(f"    baked (no break, value frozen): {b.reason} (op {b.op})")
                lines.append(f"      at {b.filename}:{b.lineno} in {b.function}")
            joint = getattr(cf, "joint", None)
            if joint is not None:
                lines += [f"    {line}" for line in backward_lines(
                    [bg.segment.graph for bg in joint.graphs.values()], joint.refusal)]
        for r in f.retraces:
            lines.append(f"  retrace {r.signature}: {r.reason}")
        if f.eager_fallbacks:
            lines.append(f"  {f.eager_fallbacks} call(s) ran eagerly: cache_size_limit="
                         f"{f.cache_size_limit} signatures reached")
    return "\n".join(lines)


def _collective_text(node) -> str:
    """A collective node as explain names it: its id and op, and for a
    DistributedDataParallel bucket the parameters it holds (graph_buckets.py)."""
    bucket = node.attr.get("bucket")
    text = f"%{node.id} {node.op}"
    return f"{text} (bucket: {', '.join(bucket)})" if bucket else text
