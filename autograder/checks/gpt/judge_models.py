"""Models of what MiniGPT and generate compute, right and with each named mistake (float64,
never in the process that runs student code), and the replays the checks keep with the
reference; the verdicts are in judge.py.
"""

from __future__ import annotations

from types import ModuleType

import torch
import torch.nn.functional as F

from ...core.verdicts import model
from ...trusted.masks import causal_mask
from . import probe

trusted: ModuleType | None
try:  # MiniGPT replays the named mistakes; the student copy has no stand-in (fewer are named)
    from ...trusted import gpt as trusted
except ImportError:
    trusted = None


# --------------------------------------------------------------------------- models
# What MiniGPT and generate compute with a given mistake, to recognise it by its output.


@model
def _built(x):
    """The trusted MiniGPT with x's weights, in eval mode."""
    return probe.load_weights(trusted.MiniGPT(**x["config"]), x["state"]).eval()


@model
def _logits(
    x,
    idx,
    *,
    scale=True,
    causal=True,
    final_norm=True,
    log_softmax=False,
    embed=None,
    head=None,
    built=None,
    positions=True,
):
    """MiniGPT's logits on x's weights, with the mistakes named by the flags (scale: True for
    √D, False for none, "divided" for 1/√D, "D" for D, "after-pe" for √D times the sum of the
    embeddings and the positions; causal: True,
    False for no mask, "inverted" for ~causal_mask and "transposed" for causal_mask(T).T: the
    wrong side blocked); embed and head
    replace token_embed's and lm_head's matrices (two matrices: an untied model). `built`:
    _built(x), when the caller replays many mistakes on the same weights."""
    model = built if built is not None else _built(x)
    idx = idx.cpu()
    T = idx.size(1)
    embed = model.token_embed.weight if embed is None else embed
    head = model.lm_head.weight if head is None else head
    with torch.no_grad():
        D = model.d_model
        factor = {True: D**0.5, False: 1.0, "divided": D**-0.5, "D": float(D)}.get(scale, 1.0)
        h = F.embedding(idx, embed) * factor
        h = model.pos_encoding(h) if positions else h
        if scale == "after-pe":
            h = h * D**0.5
        mask = causal_mask(T) if causal else None
        if causal == "inverted":
            mask = ~mask
        elif causal == "transposed":
            mask = mask.T
        for block in model.blocks:
            h, _ = block(h, mask=mask)
        logits = F.linear(model.final_norm(h) if final_norm else h, head)
    return logits.log_softmax(dim=-1) if log_softmax else logits


# The mistakes the logits check names, as _logits flags.
_LOGITS_MISTAKES = {
    "no-final-norm": {"final_norm": False},
    "log-softmax": {"log_softmax": True},
    "no-positions": {"positions": False},
}
# The embedding scale's mistakes (the embed-scale check names them) and the mask's (the causal
# check's): the logits check passes a model right but for one of them.
WRONG_SCALES = ("divided", "D", "after-pe")
_CHARGED_ELSEWHERE = {
    "no-embed-scale": {"scale": False},
    **{f"scale-{s}": {"scale": s} for s in WRONG_SCALES},
    "no-causal": {"causal": False},
    "inverted-causal": {"causal": "inverted"},
    "transposed-causal": {"causal": "transposed"},
}


def _name(flags: dict) -> str:
    return (
        ",".join(f"{k}={v if isinstance(v, str) else int(v)}" for k, v in sorted(flags.items()))
        or "correct"
    )


def _variants():
    """The correct model first, then every combination of the mistakes named elsewhere (a
    wrong embedding scale other than none: alone)."""
    return (
        [
            {"scale": s, "final_norm": f, "log_softmax": ls, "causal": c}
            for s in (True, False)
            for f in (True, False)
            for ls in (False, True)
            for c in (True, False, "inverted", "transposed")
        ]
        + [
            {"scale": s, "final_norm": True, "log_softmax": False, "causal": True}
            for s in WRONG_SCALES
        ]
        + [{"positions": False}]
    )


def _logits_replays(x):
    built = _built(x)
    mistakes = {**_LOGITS_MISTAKES, **_CHARGED_ELSEWHERE}
    return {n: _logits(x, x["idx"], built=built, **kw) for n, kw in mistakes.items()}


def _tying_replays(x):
    """MiniGPT's logits with E and W (untied), E and E, W and W (tied), each with every
    combination of the mistakes the logits check charges."""
    E, W = x["state"]["token_embed.weight"], x["head"]
    built, found = _built(x), {}
    for flags in _variants():
        for label, (embed, head) in {"untied": (E, W), "E": (E, E), "W": (W, W)}.items():
            found[f"{_name(flags)}/{label}"] = _logits(
                x, x["idx"], embed=embed, head=head, built=built, **flags
            )
    return found


def _scale_variants():
    return [
        {"final_norm": final_norm, "log_softmax": log_softmax}
        for final_norm in (True, False)
        for log_softmax in (False, True)
    ] + [{"positions": False}]


def _scale_replays(x):
    built, found = _built(x), {}
    for flags in _scale_variants():
        found[f"scaled/{_name(flags)}"] = _logits(x, x["idx"], built=built, **flags)
        found[f"unscaled/{_name(flags)}"] = _logits(x, x["idx"], scale=False, built=built, **flags)
    for scale in WRONG_SCALES:
        found[f"scale-{scale}"] = _logits(x, x["idx"], scale=scale, built=built)
    return found


def _first_row_replays(check):
    """replays= of a sampling check: each run's tokens picked from the first position's
    logits (the greedy check names that mistake; the sampling checks pass it)."""

    def replays(x):
        return {
            f"{name}/first-row": _generate(x, n, temperature, top_k, row=0)
            for name, n, temperature, top_k in probe.cases(check, x)
        }

    return replays


@model
def _generate(
    x,
    n,
    temperature,
    top_k,
    *,
    crop="last",
    temp="divide",
    top_k_on=True,
    extra=0,
    contexts=None,
    row=-1,
):
    """generate on the scripted model, with a known mistake where an argument names one;
    `contexts`: the model is fed these (one per new token: what the student's generate fed
    it) instead of the cropped sequence; `row`: the position whose logits pick the token
    (0: the first position's, a mistake)."""
    model = probe.scripted(x).eval()
    gen = torch.Generator().manual_seed(x["seed"])
    idx, m, V = x["prompt"].cpu(), model.max_len, x["table"].size(0)
    with torch.no_grad():
        for step in range(n):
            if contexts is not None:
                context = contexts[step]
            else:
                context = idx[:, -m:] if crop == "last" else idx[:, :m]
            logits = model(context)[:, row]
            if temperature == 0:
                next_id = logits.argmax(dim=-1, keepdim=True)
            else:
                if temp == "divide":
                    logits = logits / temperature
                elif temp == "multiply":
                    logits = logits * temperature
                if top_k is not None and top_k_on:
                    kth = logits.topk(min(top_k + extra, V), dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                next_id = torch.multinomial(logits.softmax(dim=-1), 1, generator=gen)
            idx = torch.cat([idx, next_id], dim=1)
    return idx


def eval_losses(model, data, starts, T):
    """(next-token loss, copy loss) of `model` on the windows at `starts` (the training
    check's, with the grader's ConvLM holding the trained weights)."""
    starts = starts % (len(data) - T - 1)
    offsets = torch.arange(T)
    x = data[starts[:, None] + offsets]
    y = data[starts[:, None] + offsets + 1]
    with torch.no_grad():
        logits = model.eval()(x).flatten(0, 1).double()
    return F.cross_entropy(logits, y.flatten()).item(), F.cross_entropy(logits, x.flatten()).item()
