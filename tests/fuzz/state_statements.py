"""The generator's statements on state: views (and when they go stale), in-place writes
to arguments, captures and intermediates, backward, .grad edits, optimizer steps and
parameter updates."""

from __future__ import annotations

from . import more_dtypes
from .program_model import (
    B,
    Var,
    broadcast,
    scalar_tags,
)


class StateStatements:
    def st_view(self) -> bool:
        if not self.on("views"):
            return False
        a = self.pick(lambda v: v.kind != "param" and v.kind != "grad")
        if a is None:
            return False
        nd = len(a.shape)
        options = ["detach"]
        if nd == 2:
            options += ["T", "transpose", "cols", "reshape3"]
        if nd >= 1 and isinstance(a.shape[0], int) and a.shape[0] >= 2:
            options += ["slice0", "row0"]
        if nd >= 1 and a.shape[0] == B and (self.on("bad_indices") or not self.b_can_be_zero):
            options += ["row0"]
        if nd == 1 and a.shape[0] == 4:
            options += ["reshape22", "unsqueeze"]
        if nd == 2 and all(isinstance(d, int) for d in a.shape):
            options += ["flatten"]
        kind = self.rng.choice(options)
        tags = {"views"}
        if kind == "detach":
            text, shape = f"{a.name}.detach()", a.shape
        elif kind == "T":
            text, shape = f"{a.name}.T", a.shape[::-1]
        elif kind == "transpose":
            text, shape = f"{a.name}.transpose()", a.shape[::-1]
        elif kind == "cols":
            if not isinstance(a.shape[1], int) or a.shape[1] < 2:
                return False
            text, shape = f"{a.name}[:, 1:]", (a.shape[0], a.shape[1] - 1)
        elif kind == "row0":
            text, shape = f"{a.name}[0]", a.shape[1:]
            if a.shape[0] == B and self.b_can_be_zero:
                tags.add("bad_indices")
        elif kind == "slice0":
            text, shape = f"{a.name}[1:]", (a.shape[0] - 1,) + a.shape[1:]
        elif kind == "reshape3":
            if a.shape[1] != 4:
                return False
            text, shape = f"{a.name}.reshape({a.shape[0] if a.shape[0] != B else -1}, 2, 2)", \
                (a.shape[0], 2, 2)
        elif kind == "reshape22":
            text, shape = f"{a.name}.reshape(2, 2)", (2, 2)
        elif kind == "unsqueeze":
            text, shape = f"{a.name}.unsqueeze(0)", (1,) + a.shape
        else:  # flatten
            text, shape = f"{a.name}.reshape(-1)", (a.shape[0] * a.shape[1],)
        rg = a.rg and kind != "detach"
        self.add_var(text, shape, a.dtype, tags, a, view_of=a, rg=rg)
        return True

    # --- in-place statements ---------------------------------------------------------------
    def root_kind(self, v: Var) -> str:
        root = next((u for u in self.vars if u.name == v.root), None)
        return root.kind if root is not None else v.kind

    def write_tags(self, t: Var) -> set | None:
        """The features a write into ``t`` needs, or None when it may not be written."""
        if t.dtype == "bool" or t.leaf_rg:
            return None
        root = next((v for v in self.vars if v.name == t.root), None)
        root_kind = root.kind if root is not None else t.kind
        if root is not None and root.leaf_rg:
            return None  # a view of a parameter: only param_updates write those
        need = {"global": "inplace_globals", "attr": "inplace_globals", "arg": "inplace_args",
                "inter": "inplace_intermediates", "grad": "grad_edits"}.get(root_kind)
        if need is None or not self.on(need):
            return None
        out = {need}
        if t.view:
            if not self.on("view_writes"):
                return None
            out.add("view_writes")
        return out | self.read_tags(t)

    def bump(self, t: Var, value_rg: bool = False) -> None:
        self.versions[t.root] = self.versions.get(t.root, 0) + 1
        for v in self.vars:
            if v is t or v.name == t.root:
                v.expr = f"{v.name}#w{self.versions[t.root]}"
        if t.view:
            # the view sees its own write; other views of the root are now stale
            t.born = self.versions[t.root]
        else:
            for v in self.vars:
                if v.name == t.name:
                    v.born = self.versions[t.root]
        if value_rg:
            t.rg = True

    def st_inplace(self) -> bool:
        t = self.pick(lambda v: self.write_tags(v) is not None, prefer_inter=0.3)
        if t is None:
            return False
        tags = self.write_tags(t)
        form = self.rng.choice(("aug", "aug", "index", "col", "mask", "zero", "assign",
                                "ellipsis"))
        value_rg = False
        if form in ("aug", "assign", "ellipsis"):
            if self.chance(0.5) and form == "aug":
                v_text = self.values.scalar(t.dtype)
                v_float = "." in v_text or v_text in ("nan", "inf")
                tags |= scalar_tags(v_text)
            else:
                v = self.pick(lambda u: self.numeric(u) and u.name != t.name
                              and broadcast(t.shape, u.shape) == t.shape)
                if v is None:
                    return False
                v_text, v_float = v.name, v.dtype.startswith("float")
                tags |= self.read_tags(v)
                value_rg = v.rg
                if value_rg:
                    # the target takes the value's history and requires grad (class 6)
                    if not self.on("write_requires_grad"):
                        return False
                    tags.add("write_requires_grad")
            if t.dtype == "int64" and v_float:
                if not self.on("casts"):
                    return False
                tags.add("casts")
            elif t.dtype in more_dtypes.SMALL_INTS and v_float:
                return False  # a float out of a small integer's range converts undefined
            if form == "aug":
                op = self.rng.choice(("+=", "-=", "*="))
                text = f"{t.name} {op} {v_text}"
            elif form == "assign":
                text = f"em.assign({t.name}, {v_text})"
            else:
                text = f"{t.name}[...] = {v_text}"
        elif form in ("index", "col", "mask"):
            c = self.values.scalar(t.dtype)
            if t.dtype == "int64" and ("." in c or c in ("nan", "inf")):
                return False
            if form == "index":
                if not t.shape:
                    return False
                d = t.shape[0]
                if d == B:
                    if self.b_can_be_zero and not self.on("bad_indices"):
                        return False
                    if self.b_can_be_zero:
                        tags.add("bad_indices")
                    i = 0
                else:
                    if d == 0:
                        return False
                    i = self.rng.randrange(d)
                text = f"{t.name}[{i}] = {c}"
            elif form == "col":
                if len(t.shape) != 2 or not isinstance(t.shape[1], int) or t.shape[1] < 1:
                    return False
                text = f"{t.name}[:, {self.rng.randrange(t.shape[1])}] = {c}"
            else:
                if not self.on("masks"):
                    return False
                tags.add("masks")
                text = f"{t.name}[{t.name} > 0] = {c}"
            tags |= scalar_tags(c)
        elif form == "zero":
            text = f"{t.name}.zero_()"
        else:
            return False
        self.emit(text, tags)
        self.bump(t, value_rg)
        return True

    # --- autograd, optimizers ----------------------------------------------------------------
    def st_backward(self) -> bool:
        if not self.has_params:
            return False
        a = self.pick(lambda v: v.dtype == "float32" and len(v.shape) in (1, 2)
                      and v.shape[-1] == 4 and v.kind != "grad")
        if a is None:
            return False
        form = self.rng.choice(("({a} @ w + b).sum()", "em.tanh({a} @ w + b).sum()",
                                "(({a} @ w) * b).sum()", "({a} @ w).mean()"))
        if self.values.near_limits:  # no matmul near the float limits (see st_matmul)
            form = "({a} * w[:, 0]).sum() + (b * b).sum()"
        loss = self.add_var(form.format(a=a.name), (), "float32", {"backward"}, a,
                            rg=True)
        # retain_graph: a later backward may pass through the same history (the values
        # a backward without it frees are PyTorch's; tests/torch_front twins that path).
        self.emit(f"{loss.name}.backward(retain_graph=True)", {"backward"})
        self.live_grads |= {"w", "b"}
        return True

    def st_grad_edit(self) -> bool:
        if not (self.on("grad_edits") and self.live_grads):
            return False
        owner = self.rng.choice(sorted(self.live_grads))
        form = self.rng.choice(("none", "rebind"))
        if form == "none":
            self.emit(f"{owner}.grad = None", {"grad_edits", "backward"})
            self.live_grads.discard(owner)
        else:
            self.emit(f"{owner}.grad = {owner}.grad * 0.5", {"grad_edits", "backward"})
        return True

    def st_optimizer(self) -> bool:
        if not self.has_opt:
            return False
        if self.live_grads and self.chance(0.7):
            self.emit("opt.step()", {"optimizers", "backward"})
            self.versions["w"] = self.versions.get("w", 0) + 1
            self.versions["b"] = self.versions.get("b", 0) + 1
        else:
            self.emit("opt.zero_grad()", {"optimizers", "backward"})
            self.live_grads.clear()
        return True

    def st_param_update(self) -> bool:
        if not (self.on("param_updates") and self.live_grads):
            return False
        owner = self.rng.choice(sorted(self.live_grads))
        tags = {"param_updates", "backward"}
        if self.on("object_scalars") and self.chance(0.5):
            lr = "obj.lr"
            tags.add("object_scalars")
        else:
            lr = "0.5"
        self.emit(f"with em.no_grad(): {owner} -= {lr} * {owner}.grad", tags)
        self.versions[owner] = self.versions.get(owner, 0) + 1
        return True
