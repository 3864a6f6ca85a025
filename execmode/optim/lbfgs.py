"""L-BFGS (PyTorch's ``optim.LBFGS``): a quasi-Newton method that calls the closure many
times per ``step(closure)``, with an optional strong-Wolfe line search.

Eager in effect. Every iteration decides in Python from the values it computes: whether
the gradient is small enough, whether ``y.s`` is positive enough to update the history,
when the line search has bracketed a step (PyTorch's own implementation does the same,
with ``float()`` and tensor comparisons). Under ``em.jit`` each of those decisions is a
graph break, so a jitted ``step(closure)`` runs, with the same numbers, as many small
graphs plus Python, and gains nothing: call it outside ``em.jit`` (jit the closure's model
instead, if its forward is the expensive part). Unlike the other optimizers it keeps no
state tensors made up front: its history grows during the first steps, as PyTorch's.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import functional as F
from ..errors import ArgumentError
from ..grad_mode import enable_grad, no_grad
from .optimizer import Optimizer


def _dot(a, b):
    return F.matmul(a, b)


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), within bounds."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square ** 0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """PyTorch's strong-Wolfe line search (after minFunc): returns (f, g, t, evals)."""
    d_norm = float(F.max(F.abs(d)))
    g = F.copy(g)
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = float(_dot(g_new, d))
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, F.copy(g_new)], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, F.copy(g_new)], [gtd_prev, gtd_new]
            break
        # interpolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, F.copy(g_new), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = float(_dot(g_new, d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom phase: a point satisfying the criteria inside the bracket
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = float(_dot(g_new, d))
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = F.copy(g_new), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos] = bracket[low_pos]
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = F.copy(g_new), gtd_new
    t = bracket[low_pos]
    return bracket_f[low_pos], bracket_g[low_pos], t, ls_func_evals


class LBFGS(Optimizer):
    """L-BFGS with PyTorch's arguments, iterations and line search; one parameter group
    only (as PyTorch). ``step(closure)`` needs the closure: it zeroes the gradients,
    computes the loss, calls ``backward()`` and returns the loss. Eager in effect: see
    the module's docstring."""

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise ArgumentError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                                f"{line_search_fn!r}")
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ArgumentError("LBFGS doesn't support per-parameter options (parameter "
                                "groups), as in PyTorch")
        self.state[0] = {"func_evals": 0, "n_iter": 0}

    def add_param_group(self, group: dict) -> None:
        """Refused after the first group: LBFGS has one parameter group."""
        if getattr(self, "param_groups", None):
            raise ArgumentError("LBFGS doesn't support per-parameter options (parameter "
                                "groups), as in PyTorch")
        super().add_param_group(group)

    # --- flat views of the parameters and their gradients -------------------------------
    def _gather_flat_grad(self):
        views = [F.zeros(p.size, dtype=p.dtype, device=p.device) if p.grad is None
                 else F.reshape(p.grad, (-1,)) for p in self.params]
        # concat makes a copy, as torch.cat does: the line search keeps earlier flat
        # gradients, and the next closure's backward adds into .grad in place.
        return F.concat(views, axis=0)

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        for p in self.params:
            n = p.size
            F.assign(p, p + step_size * F.reshape(update[offset:offset + n], p.shape))
            offset += n

    def _clone_param(self):
        return [F.copy(p) for p in self.params]

    def _set_param(self, params_data) -> None:
        for p, data in zip(self.params, params_data):
            F.assign(p, data)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure: Callable | None = None):
        """Up to ``max_iter`` L-BFGS iterations, calling ``closure`` (under grad mode) for
        the loss and its gradients; returns the loss of the first call."""
        if closure is None:
            raise ArgumentError("LBFGS.step needs a closure that recomputes the loss (zero "
                                "the gradients, compute the loss, backward(), return it)")
        self._init_lazy_state()
        with no_grad():
            return self._lbfgs(closure)

    def _step_group(self, group: dict, indices: list[int]) -> None:  # pragma: no cover
        raise NotImplementedError("LBFGS steps through step(closure)")

    def _lbfgs(self, closure):  # noqa: C901, PLR0912, PLR0915 - PyTorch's loop, kept whole
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state[0]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(F.max(F.abs(flat_grad))) <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # --- the descent direction ---
            if state["n_iter"] == 1:
                d = F.negative(flat_grad)
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(_dot(y, s))
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(_dot(y, y))
                num_old = len(old_dirs)
                al = state.setdefault("al", [None] * history_size)
                q = F.negative(flat_grad)
                for i in range(num_old - 1, -1, -1):
                    al[i] = float(_dot(old_stps[i], q)) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(num_old):
                    be_i = float(_dot(old_dirs[i], r)) * ro[i]
                    r = r + (al[i] - be_i) * old_stps[i]
                d = r
            prev_flat_grad = F.copy(flat_grad)
            prev_loss = loss
            # --- the step length ---
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(F.sum(F.abs(flat_grad)))) * lr
            else:
                t = lr
            gtd = float(_dot(flat_grad, d))
            if gtd > -tolerance_change:
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = float(F.max(F.abs(flat_grad))) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(F.max(F.abs(flat_grad))) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            # --- stopping conditions ---
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(F.max(F.abs(d * t))) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    # --- state_dict: one entry of Python values and lists of tensors ---------------------
    def state_dict(self) -> dict:
        """PyTorch's layout: the whole history under parameter 0 (``d``, ``t``,
        ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``,
        ``prev_loss``, ``n_iter``, ``func_evals``)."""
        out = super().state_dict()
        out["state"] = {0: {k: (list(v) if isinstance(v, list) else v)
                            for k, v in self.state[0].items()}}
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the history and the hyperparameters (tensors kept as given)."""
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict \
                or "state" not in state_dict:
            raise ArgumentError("LBFGS.load_state_dict expects a dict with 'state' and "
                                "'param_groups' (from opt.state_dict())")
        saved = state_dict["param_groups"]
        if len(saved) != 1 or len(saved[0]["params"]) != len(self.params):
            raise ArgumentError("LBFGS.load_state_dict: the checkpoint's parameter group "
                                "does not match this optimizer's")
        entries = dict(state_dict["state"].get(0, state_dict["state"].get("0", {})))
        self.state[0] = {k: (list(v) if isinstance(v, list) else v)
                         for k, v in entries.items()}
        for key, value in saved[0].items():
            if key != "params":
                self.param_groups[0][key] = value


__all__ = ["LBFGS"]
