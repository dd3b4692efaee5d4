"""Probe side of diagnostics.py's W_O checks: fix_wo_to_identity, train_recall and
wo_experiment, on short runs whose seeds and lengths are drawn from the check's generator (a
curve typed in from one run of the experiment matches none of them).

Imported by the process that runs student code: nothing here judges or computes an answer.
While diagnostics is graded, MultiHeadAttention is the trusted one.
"""

from __future__ import annotations

import torch

from ...run.probing import one_torch_thread, randn


def _seed(gen):
    return int(torch.randint(0, 2**31 - 1, (), generator=gen))


def _steps(gen):
    # 20 to 28 steps: both runs of wo_experiment take well under a second on a CPU.
    return int(torch.randint(20, 29, (), generator=gen))


def inputs_identity(gen):
    H = int(torch.randint(2, 5, (), generator=gen))
    D = H * int(torch.randint(2, 5, (), generator=gen))
    return {"D": D, "H": H, "seed": _seed(gen), "x": randn(gen, 2, 3, D)}


def inputs_run(gen):
    return {"seed": _seed(gen), "steps": _steps(gen)}


def _map(w_o, D):
    """W_O as the map it is: its value on the D basis rows minus its value at 0 (its weight,
    transposed, for a Linear), and its value at 0 (the bias); any module (nn.Identity too)."""
    with torch.no_grad():
        at_zero = w_o(torch.zeros(1, D))
        return (w_o(torch.eye(D)) - at_zero).clone(), at_zero[0].clone()


def probe_identity(mod, x):
    torch.manual_seed(x["seed"])
    D = x["D"]
    attn = mod.MultiHeadAttention(D, x["H"])
    mod.fix_wo_to_identity(attn)
    weight, bias = _map(attn.w_o, D)
    frozen_too = sorted(
        name
        for name, p in attn.named_parameters()
        if not name.startswith("w_o.") and not p.requires_grad
    )
    params = [p for p in attn.parameters() if p.requires_grad]
    out, _ = attn(x["x"])
    if params:  # (nothing to train when every parameter was frozen: wo-freezes-more)
        optimizer = torch.optim.SGD(params, lr=0.1)
        out.square().sum().backward()
        optimizer.step()
    after, bias_after = _map(attn.w_o, D)
    return {
        "weight": weight,
        "bias": bias,
        "requires_grad": any(p.requires_grad for p in attn.w_o.parameters()),
        "after": after,
        "bias_after": bias_after,
        "frozen_too": ",".join(frozen_too),
    }


def probe_train(mod, x):
    with one_torch_thread():
        torch.manual_seed(x["seed"])
        model = mod.RecallModel()
        return {"losses": mod.train_recall(model, x["steps"], seed=x["seed"])}


def probe_experiment(mod, x):
    with one_torch_thread():
        curves = mod.wo_experiment(steps=x["steps"], seed=x["seed"])
    if not isinstance(curves, dict):
        return {"type": type(curves).__name__}
    return {k: v for k, v in curves.items() if k in ("learned", "identity")}
