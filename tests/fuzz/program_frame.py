"""The program around the generated body: the module-level set-up (captures, an object,
parameters and their optimizer), the function's parameters, what it returns, and the
calls with what happens between them (state changes, backward through results)."""

from __future__ import annotations

from .program import Call, Stmt
from .program_model import (
    B,
    Var,
)


class ProgramFrame:
    def make_setup(self) -> list:
        def lit(target, shape, dtype, requires_grad=False):
            text, tags = self.values.literal(shape, dtype, requires_grad)
            return Stmt(f"{target} = {text}", frozenset(tags))

        setup = [
            Stmt("class Obj: pass"),
            Stmt("obj = Obj()"),
            Stmt("obj.lr = 0.5"),
            Stmt("obj.step = 1"),
            Stmt("obj.flag = True"),
            lit("obj.buf", (4,), "float32"),
            lit("g0", (4,), "float32"),
            lit("g1", (4, 3), "float32"),
            lit("gi", (4,), "int64"),
        ]
        self.vars += [Var("obj.buf", (4,), "float32", "attr", "obj.buf"),
                      Var("g0", (4,), "float32", "global", "g0"),
                      Var("g1", (4, 3), "float32", "global", "g1"),
                      Var("gi", (4,), "int64", "global", "gi")]
        if self.on("backward") and not self.forward_only:
            self.has_params = True
            setup += [lit("w", (4, 3), "float32", requires_grad=True),
                      lit("b", (3,), "float32", requires_grad=True)]
            self.vars += [Var("w", (4, 3), "float32", "param", "w", rg=True, leaf_rg=True),
                          Var("b", (3,), "float32", "param", "b", rg=True, leaf_rg=True),
                          Var("w.grad", (4, 3), "float32", "grad", "w.grad"),
                          Var("b.grad", (3,), "float32", "grad", "b.grad")]
            if self.on("optimizers"):
                self.has_opt = True
                if self.chance(0.5):
                    setup.append(Stmt("opt = em.optim.SGD([w, b], lr=0.5, momentum=0.5)",
                                      frozenset({"optimizers"})))
                else:
                    # eps well above float32 noise: with the default 1e-8, a gradient of
                    # 1e-8 makes g / (|g| + eps) amplify 1-ulp kernel differences 1e6-fold
                    setup.append(Stmt("opt = em.optim.Adam([w, b], lr=0.25, eps=0.0625)",
                                      frozenset({"optimizers"})))
        return setup

    def make_params(self) -> list:
        specs = [("x", (B, 4), "float32")]
        if self.chance(0.5):
            specs.append(("y", (4,), "float32"))
        if self.chance(0.3):
            specs.append(("z", (B, 4), "float32"))
        if self.chance(0.3):
            specs.append(("k", (B, 4), "int64"))
        if self.chance(0.15):
            specs.append(("d", (4,), "float64"))
        self.param_specs = []
        for name, shape, dtype in specs:
            rg = (dtype.startswith("float") and self.on("arg_requires_grad")
                  and self.on("backward") and self.chance(0.2) and not self.forward_only)
            self.param_specs.append((name, shape, dtype, rg))
            self.vars.append(Var(name, shape, dtype, "arg", name, rg=rg, leaf_rg=rg))
        return [s[0] for s in self.param_specs]

    # --- value-producing statements --------------------------------------------------------

    def make_returns(self) -> tuple[list, bool]:
        """1-3 returned variables (Stmt: the name, tagged with what returning it tests)."""
        out = []
        n = self.rng.randint(1, 3)
        for _ in range(n):
            def ok(v):
                if v.rg and not v.leaf_rg and not self.on("return_requires_grad"):
                    return False  # a computed value that requires grad (a leaf is itself)
                if v.view and self.root_kind(v) != "inter" and not self.on("return_views"):
                    return False
                if v.kind == "arg":
                    return self.on("return_args")
                if v.kind in ("global", "attr"):
                    return self.on("return_captures")
                if v.kind == "param":
                    return self.on("return_params")
                if v.kind == "grad":
                    return self.on("return_grads")
                return True
            v = self.pick(ok, prefer_inter=0.7)
            if v is None or v.name in out:
                continue
            if any(u.expr == v.expr for u in self.vars if u.name in out) and \
                    not self.on("return_duplicates"):
                continue  # CSE merges them into one node: two outputs of one node (class 1)
            out.append(v.name)
        if out and self.on("return_duplicates") and self.chance(0.2):
            out.append(self.rng.choice(out))
        stmts, seen = [], set()
        by_name = {v.name: v for v in self.vars}
        for n in out:
            tags = self.return_tags(n)
            if by_name[n].expr in seen:
                tags.add("return_duplicates")
            seen.add(by_name[n].expr)
            stmts.append(Stmt(n, frozenset(tags)))
        single = len(stmts) == 1 and self.chance(0.5)
        return stmts, single

    def return_tags(self, name: str) -> set:
        v = next(v for v in self.vars if v.name == name)
        tags = {"return_requires_grad"} if v.rg and not v.leaf_rg else set()
        if v.view and self.root_kind(v) != "inter":
            tags.add("return_views")
        return tags | self.read_tags(v) | {"arg": {"return_args"}, "global": {"return_captures"},
                                    "attr": {"return_captures"}, "param": {"return_params"},
                                    "grad": {"return_grads"}}.get(v.kind, set())

    def make_calls(self) -> list:
        # A program with symbolic sizes calls f at 4-6 distinct batch sizes >= 2 (its own
        # stream: the other programs of a seed keep the calls they had before it existed).
        sizes = self.sizes
        n_calls = self.rng.randint(2, 4) if sizes is None else len(sizes)
        calls = []
        globals_by_spec = {((4,), "float32"): ["g0", "obj.buf"], ((4,), "int64"): ["gi"]}
        for k in range(n_calls):
            before = []
            if k > 0:
                before += self.between_calls()
                before += self.outer_backward(k)
            if sizes is not None:
                batch = sizes[k]
            else:
                batch = self.rng.choice((0, 1, 5)) if self.on("batch_sizes") else 3
            args = []
            made = {}
            for name, shape, dtype, rg in self.param_specs:
                key = (shape, dtype)
                if self.on("alias_args") and not rg and self.chance(0.25):
                    if key in made and self.chance(0.5):
                        args.append(made[key])
                        before.append(Stmt(f"# {name}: the same tensor again",
                                           frozenset({"alias_args"})))
                        continue
                    if key in globals_by_spec:
                        g = self.rng.choice(globals_by_spec[key])
                        args.append(g)
                        before.append(Stmt(f"# {name}: the captured {g} itself",
                                           frozenset({"alias_args"})))
                        continue
                concrete = tuple(batch if d == B else d for d in shape)
                text, tags = self.values.literal(concrete, dtype, requires_grad=rg)
                arg_name = f"{name}{k + 1}"
                if rg:
                    tags.add("arg_requires_grad")
                if B in shape and sizes is not None:
                    tags.add("symbolic_sizes")
                elif B in shape and batch != 3:
                    tags.add("batch_sizes")
                before.append(Stmt(f"{arg_name} = {text}", frozenset(tags)))
                args.append(arg_name)
                made[key] = arg_name
            calls.append(Call(before, args))
        return calls

    def symbolic_sizes(self) -> list | None:
        """The batch sizes of a program that exercises em.jit's symbolic sizes, or None.

        After a dimension took two sizes it is traced with a SymInt; once two traces at
        sizes >= 2 give one graph, that graph serves every further size (symbolic_dims.py).
        Four or more distinct sizes >= 2 reach that plan from the third or fourth call on;
        a size seen before (its own plan) or a step down (a replay checks its guard at a
        smaller size) comes back now and then."""
        if not (self.on("symbolic_sizes") and self.on("batch_sizes")) or \
                self.size_rng.random() >= 0.5:
            return None
        r = self.size_rng
        n = r.randint(4, 6)
        shape = r.random()
        if shape < 0.4:       # a growing length, as a sampling loop's
            start = r.randint(2, 4)
            sizes = list(range(start, start + n))
        elif shape < 0.7:     # distinct batch sizes in any order
            sizes = r.sample(range(2, 12), n)
        else:                 # growing by a stride
            step = r.randint(2, 3)
            sizes = list(range(2, 2 + step * n, step))
        if r.random() < 0.3:
            sizes.append(r.choice(sizes[:-1]))  # a size seen before
        return sizes

    def between_calls(self) -> list:
        out = []
        if self.on("mutate_between_calls") and self.chance(0.4):
            g = self.rng.choice(("g0", "obj.buf", "g1", "gi"))
            form = self.rng.choice(("aug", "index", "zero"))
            if form == "aug":
                c = self.values.scalar("int64" if g == "gi" else "float32")
                text = f"{g} += {c}"
            elif form == "index":
                text = f"{g}[1] = {self.values.scalar('int64' if g == 'gi' else 'float32')}"
            else:
                text = f"{g}.zero_()"
            out.append(Stmt(text, frozenset({"mutate_between_calls"})))
        if self.on("global_rebind") and self.chance(0.4):
            g, shape, dtype = self.rng.choice((("g0", (4,), "float32"),
                                               ("obj.buf", (4,), "float32"),
                                               ("g1", (4, 3), "float32"),
                                               ("gi", (4,), "int64")))
            text, tags = self.values.literal(shape, dtype)
            out.append(Stmt(f"{g} = {text}", frozenset(tags | {"global_rebind"})))
        if self.on("object_scalars") and self.chance(0.5):
            choices = [f"obj.lr = {self.rng.choice((0.25, 0.125, 2.0, 1.5))}",
                       "obj.step += 1", "obj.flag = not obj.flag"]
            if self.has_opt:
                choices.append(f"opt.lr = {self.rng.choice((0.125, 0.0625, 1.0))}")
            out.append(Stmt(self.rng.choice(choices), frozenset({"object_scalars"})))
        if self.has_params and self.chance(0.3):
            text = "opt.zero_grad()" if self.has_opt and self.chance(0.5) else "w.grad = None"
            out.append(Stmt(text, frozenset({"backward"})))
        return out

    def outer_backward(self, k: int) -> list:
        """backward() through the results of call ``k`` (outK), outside f: under jit it
        runs the call's compiled backward graph; maybe an optimizer step after it."""
        if not (self.on("outer_backward") and self.differentiable) or \
                self.outer.random() < 0.5:
            return []
        picked = self.outer.sample(self.differentiable,
                                   min(len(self.differentiable), self.outer.randint(1, 2)))
        items = [f"out{k}" if self.single else f"out{k}[{j}]" for j in picked]
        if len(items) == 2:
            text = f"({items[0]}.sum() + {items[1]}.sum()).backward()"
        else:
            text = f"({items[0]} * {items[0]}).sum().backward()"
        out = [Stmt(text, frozenset({"outer_backward", "backward"}))]
        if self.has_opt and self.outer.random() < 0.5:
            out.append(Stmt("opt.step()", frozenset({"outer_backward", "optimizers"})))
        return out
