"""Judge side of modern_blocks.py's checks: misconceptions, models of wrong computations,
verdicts."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...core.check import CheckList
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import assert_close, assert_gradients, assert_kept, close, model, tensor
from . import probe

CHECKS = CheckList("modern_blocks")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- rms_norm


@model
def _rms(
    x,
    weight=None,
    eps=1e-6,
    *,
    center=False,
    reduce="mean",
    root=True,
    dims=(-1,),
    eps_mode="inside",
    use_weight=True,
):
    """The RMS norm that a given mistake computes, in float64."""
    x = x.double()
    if center:
        x = x - x.mean(dim=dims, keepdim=True)
    sq = x.pow(2)
    sq = sq.sum(dim=dims, keepdim=True) if reduce == "sum" else sq.mean(dim=dims, keepdim=True)
    if eps_mode == "inside":
        scale = torch.sqrt(sq + eps) if root else sq + eps
    else:
        scale = (torch.sqrt(sq) if root else sq) + eps
    y = x / scale
    if weight is not None and use_weight:
        y = y * weight.double()
    return y


def _structure_mistakes(case):
    """Mistakes in what is normalised and how (charged by the rms-norm check):
    (label, id, keywords of _rms)."""
    x = case["x"]
    found = [
        ("centred", MISTAKES["rms-norm-subtracts-mean"], {"center": True}),
        ("sum", MISTAKES["rms-norm-root-of-sum"], {"reduce": "sum"}),
        ("no-root", MISTAKES["rms-norm-no-root"], {"root": False}),
        ("all-dims", MISTAKES["rms-norm-wrong-dim"], {"dims": tuple(range(x.dim()))}),
    ]
    if x.dim() > 1:
        found.append(("dim-0", MISTAKES["rms-norm-wrong-dim"], {"dims": (0,)}))
    if case.get("weight") is not None:
        found.append(("no-weight", MISTAKES["rms-norm-weight-ignored"], {"use_weight": False}))
    return found


def _eps_mistakes(case):
    """Mistakes in where eps goes and which eps is used (charged by the rms-norm-eps check):
    (label, id, keywords of _rms, details)."""
    eps = case.get("eps", 1e-6)
    found = [("eps-outside", MISTAKES["rms-norm-eps-outside-sqrt"], {"eps_mode": "outside"}, {})]
    for other in (0.0, 1e-6, 1e-5):
        if other != eps:
            found.append(
                (f"eps-{other:g}", MISTAKES["rms-norm-eps-ignored"], {"eps": other}, {"eps": eps})
            )
    return found


def _rms_norm_mistakes(case):
    """Every named mistake of rms_norm, alone and with an eps mistake:
    (label, id, keywords of _rms, details)."""
    structure, eps = _structure_mistakes(case), _eps_mistakes(case)
    found = [(label, m, kw, {}) for label, m, kw in structure]
    found += [(label, m, e, d) for label, m, e, d in eps]
    found += [
        (f"{label}+{e_label}", m, {**kw, **e}, {})
        for label, m, kw in structure
        for e_label, _, e, _ in eps
    ]
    return found


def _model(case, **kw):
    args = {"weight": case.get("weight"), "eps": case.get("eps", 1e-6), **kw}
    return lambda: _rms(case["x"], **args).to(case["x"].dtype)


def _replays(x, mistakes):
    """rms_norm with each of mistakes(case) on each case, replayed with the reference
    (core.Check.replays): "<case>/<label>"."""
    return {
        f"{name}/{label}": _model(case, **kw)()
        for name, case in x.items()
        for label, _, kw, *_ in mistakes(case)
    }


def _is_one_of(y, want, name, labels):
    """Whether y is the replayed output of one of these mistakes on case `name`."""
    return any(close(y, want[f"replay/{name}/{label}"]) for label in labels)


def _eps_replays(x):
    return _replays(x, _eps_mistakes)


def _structure_replays(x):
    return _replays(x, _structure_mistakes)


def _rms_norm_replays(x):
    return _replays(x, _rms_norm_mistakes)


def _rms_what(case):
    args = "x" + ("" if case.get("weight") is None else ", weight")
    args += "" if "eps" not in case else f", eps={case['eps']:g}"
    return f"rms_norm({args}) on x of shape {tuple(case['x'].shape)}"


def _rms_output(got, name, case):
    return tensor(got, name, _rms_what(case), shape=case["x"].shape, dtype=case["x"].dtype)


RMS_NORM = CHECKS.exercise("rms_norm", probe=probe.probe_rms_norm)


@RMS_NORM.check("rms-norm", inputs=probe.inputs_rms_norm, replays=_eps_replays)
def verdict_rms_norm(got, want, x):
    """Everything but eps: a result that is right but for where eps goes or which eps is
    used (replayed with the reference) passes here, as the rms-norm-eps check charges it
    (each difference is charged once). rms_norm must leave x and weight as they were."""
    assert_kept(got, "rms_norm")
    for name, case in x.items():
        y = _rms_output(got, name, case)  # x's dtype
        if y.dtype == torch.float64:  # its values as float32 can hold them: LLaMA's
            # RMSNorm computes in float32 and casts back (the other cases name mistakes)
            assert_close(y.float(), want[name].float(), _rms_what(case))
            continue
        if _is_one_of(y, want, name, [label for label, *_ in _eps_mistakes(case)]):
            continue
        structure = _structure_mistakes(case)
        candidates = [(m, _model(case, **kw), {}) for _, m, kw in structure]
        candidates += [
            (m, _model(case, **kw, **e), {})
            for _, m, kw in structure
            for _, _, e, _ in _eps_mistakes(case)
        ]
        assert_close(y, want[name], _rms_what(case), candidates)


@RMS_NORM.check("rms-norm-eps", inputs=probe.inputs_rms_norm_eps, replays=_structure_replays)
def verdict_rms_norm_eps(got, want, x):
    """Where eps goes and which eps is used. A result that is right about eps but has a
    mistake the rms-norm check charges (replayed with the reference) passes here (each
    difference is charged once)."""
    for name, case in x.items():
        y = _rms_output(got, name, case)
        structure = _structure_mistakes(case)
        if _is_one_of(y, want, name, [label for label, *_ in structure]):
            continue
        eps = _eps_mistakes(case)
        candidates = [(m, _model(case, **e), d) for _, m, e, d in eps]
        candidates += [
            (m, _model(case, **kw, **e), d) for _, m, e, d in eps for _, _, kw in structure
        ]
        assert_close(y, want[name], _rms_what(case), candidates)


# --------------------------------------------------------------------------- RMSNorm


RMSNORM = CHECKS.exercise("RMSNorm", probe=probe.probe_rms_module)


@RMSNORM.check("rms-norm-module", inputs=probe.inputs_rms_module, replays=_rms_norm_replays)
def verdict_rms_module(got, want, x):
    """An RMSNorm that returns what the student's own rms_norm(x, weight, eps) returned passes
    when that is one of rms_norm's named mistakes (replayed with the reference): the rms_norm
    checks charge it (each difference is charged once). Only a named mistake: what the
    student's process says its rms_norm returns is not trusted to excuse any output."""
    for name, case in x.items():
        D, eps = case["x"].size(-1), case.get("eps", 1e-6)
        what = f"RMSNorm({D}" + ("" if "eps" not in case else f", eps={eps:g}") + ")"
        what += f" on x of shape {tuple(case['x'].shape)}"
        out = tensor(got, name, what, shape=case["x"].shape, dtype=case["x"].dtype)
        if close(out, want[name]):
            continue
        own = got.get(f"{name}/own")
        mistakes = _rms_norm_mistakes(case)
        if (
            type(own) is torch.Tensor
            and close(out, own)
            and _is_one_of(own, want, name, [label for label, *_ in mistakes])
        ):
            continue
        case = {"eps": eps, **case}
        candidates = [
            (MISTAKES["rmsnorm-module-weight-ignored"], _model(case, use_weight=False), {})
        ]
        for other in (1e-6, 1e-5, 0.0):
            if other != eps:
                candidates.append(
                    (
                        MISTAKES["rmsnorm-module-eps-ignored"],
                        _model(case, eps=other),
                        {"eps": eps, "used": other},
                    )
                )
        # RMSNorm computed on its own (not through rms_norm), with one of rms_norm's mistakes
        candidates += [(m, _model(case, **kw), d) for _, m, kw, d in mistakes]
        assert_close(out, want[name], what, candidates)
    assert_gradients(got, want, "RMSNorm")  # its weight learns


# --------------------------------------------------------------------------- SwiGLU

_ACTS = {
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu-tanh": lambda h: F.gelu(h, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "relu": F.relu,
    "none": lambda h: h,
}


@model
def _swiglu(x, sd, variant="ref", act="silu"):
    """What SwiGLU with a given mistake computes, in float64."""
    x = x.double()
    gate = F.linear(x, sd["w_gate.weight"].double())
    up = F.linear(x, sd["w_up.weight"].double())
    f = _ACTS[act]
    hidden = {
        "ref": lambda: f(gate) * up,
        "swapped": lambda: f(up) * gate,
        "up-only": lambda: f(up),
        "gate-only": lambda: f(gate),
        "after-product": lambda: f(gate * up),
    }[variant]()
    return F.linear(hidden, sd["w_down.weight"].double()).float()


def _swiglu_candidates(x, sd):
    def lazy(variant="ref", act="silu"):
        return lambda: _swiglu(x, sd, variant, act)

    return [
        (MISTAKES["swiglu-gate-on-wrong-branch"], lazy("swapped"), {}),
        (MISTAKES["swiglu-gelu-for-silu"], lazy(act="gelu"), {}),
        (MISTAKES["swiglu-gelu-for-silu"], lazy(act="gelu-tanh"), {}),
        (MISTAKES["swiglu-sigmoid-for-silu"], lazy(act="sigmoid"), {}),
        (MISTAKES["swiglu-relu-for-silu"], lazy(act="relu"), {}),
        (MISTAKES["swiglu-no-gate"], lazy("up-only"), {"branch": "w_up"}),
        (MISTAKES["swiglu-no-gate"], lazy("gate-only"), {"branch": "w_gate"}),
        (MISTAKES["swiglu-no-activation"], lazy(act="none"), {}),
        (MISTAKES["swiglu-silu-after-product"], lazy("after-product"), {}),
    ]


SWI_GLU = CHECKS.exercise("SwiGLU", probe=probe.probe_swiglu)


@SWI_GLU.check("swiglu", inputs=probe.inputs_swiglu)
def verdict_swiglu(got, want, x):
    d_ff, D = x["weights"]["w_gate.weight"].shape
    for key, inp in (("out", "x"), ("out2", "x2")):
        what = f"SwiGLU({D}, {d_ff}) on x of shape {tuple(x[inp].shape)}"
        out = tensor(got, key, what, shape=x[inp].shape, dtype=torch.float32)
        assert_close(out, want[key], what, _swiglu_candidates(x[inp], x["weights"]))
    assert_gradients(got, want, f"SwiGLU({D}, {d_ff})")
