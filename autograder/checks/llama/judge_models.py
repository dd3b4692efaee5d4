"""Models of what MiniLlama computes, right and with each named mistake (float64, never in the
process that runs student code): RotaryAttention, LlamaBlock and the whole model, written from
PyTorch operations (rotary as "rotate half", RMSNorm, SwiGLU, grouped heads by index), with
flags for the known mistakes; the verdicts are in judge.py.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...core.verdicts import close, model, tensor
from ..gqa.judge import kv_map
from . import probe


def _lin(h, w):
    return h @ w.double().T


@model
def rms(h, weight, eps):
    return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.double()


@model
def _turn(t, positions, base, rope="half"):
    """Rotary embeddings as "rotate half": t·cos(a) + (-t₂, t₁)·sin(a), pairs (i, i + d/2);
    rope="interleaved": Meta's convention, pairs (2i, 2i + 1) turned by the same angles."""
    half = t.size(-1) // 2
    freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / t.size(-1))
    angles = positions.double()[:, None] * freq  # (T, d/2)
    if rope == "interleaved":
        cos, sin = angles.cos().repeat_interleave(2, -1), angles.sin().repeat_interleave(2, -1)
        return t * cos + torch.stack([-t[..., 1::2], t[..., ::2]], dim=-1).flatten(-2) * sin
    cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)  # (T, d)
    return t * cos + torch.cat([-t[..., half:], t[..., :half]], dim=-1) * sin


@model
def attend(
    sd,
    p,
    h,
    positions,
    mask,
    c,
    *,
    rotary: str = "qk",
    base: float | None = None,
    arange: bool = False,
    pairing: str = "ok",
    rope: str = "half",
    heads_as: str = "transpose",
    divisor: str = "d_k",
):
    """RotaryAttention's (out, weights); state entries under the prefix p. divisor: the width
    whose square root divides the scores ("d_model": the model's, not one head's; "one": no
    division). heads_as="view":
    the heads split and merged by reshape alone, with no transpose (multihead's mistakes);
    "split-view", "merge-view": only the split, only the merge."""
    H, H_kv = c["num_heads"], c["num_kv_heads"]
    B, T, D = h.shape
    d_k = D // H

    def heads(name, n):
        if heads_as in ("view", "split-view"):
            return _lin(h, sd[f"{p}{name}.weight"]).reshape(B, n, T, d_k)
        return _lin(h, sd[f"{p}{name}.weight"]).reshape(B, T, n, d_k).transpose(1, 2)

    q, k, v = heads("w_q", H), heads("w_k", H_kv), heads("w_v", H_kv)
    at = torch.arange(T) if arange else positions.cpu()
    turned = {
        name: _turn(t, at, c["base"] if base is None else base, rope) if name in rotary else t
        for name, t in (("q", q), ("k", k), ("v", v))
    }
    group = kv_map(H, H_kv, pairing)
    by = {"d_k": math.sqrt(d_k), "d_model": math.sqrt(D), "one": 1.0}[divisor]
    scores = turned["q"] @ turned["k"][:, group].transpose(-2, -1) / by
    if mask is not None:
        scores = scores.masked_fill(mask.cpu(), float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:  # a fully blocked row: zero weights (attention.py's promise)
        weights = weights.masked_fill(mask.cpu().all(dim=-1, keepdim=True), 0.0)
    out = weights @ turned["v"][:, group]
    if heads_as in ("transpose", "split-view"):
        out = out.transpose(1, 2)
    out = out.reshape(B, T, D)
    return _lin(out, sd[f"{p}w_o.weight"]), weights


@model
def llama_block(sd, p, x, positions, mask, c, *, norm="pre", **attention):
    n1, n2 = sd[f"{p}attn_norm.weight"], sd[f"{p}ffn_norm.weight"]
    if norm == "swapped":
        n1, n2 = n2, n1
    if norm == "one-norm":
        n2 = n1

    def attn(h):
        return attend(sd, f"{p}attn.", h, positions, mask, c, **attention)[0]

    def ffn(h):
        gate = F.silu(_lin(h, sd[f"{p}ffn.w_gate.weight"]))
        return _lin(gate * _lin(h, sd[f"{p}ffn.w_up.weight"]), sd[f"{p}ffn.w_down.weight"])

    eps = c["eps"]
    if norm == "post":
        x = rms(x + attn(x), n1, eps)
        return rms(x + ffn(x), n2, eps)
    if norm == "from-normed":  # x = norm(x); x = x + sublayer(x)
        x = rms(x, n1, eps)
        x = x + attn(x)
        x = rms(x, n2, eps)
        return x + ffn(x)
    if norm == "no-residual-attn":
        x = attn(rms(x, n1, eps))
        return x + ffn(rms(x, n2, eps))
    if norm == "parallel":  # the feed-forward reads the block's input, not h
        h = x + attn(rms(x, n1, eps))
        return h + ffn(rms(x, n2, eps))
    if norm == "no-residual-ffn":
        x = x + attn(rms(x, n1, eps))
        return ffn(rms(x, n2, eps))
    x = x + attn(rms(x, n1, eps))
    return x + ffn(rms(x, n2, eps))


@model
def llama_logits(sd, c, idx, *, final_norm=True, scale=False, causal=True, head="", **block):
    """MiniLlama's logits (B, T, V) in float64 for the state sd and config c. head="tied-W":
    one matrix for the embedding and the head, holding lm_head.weight (a tie made in
    __init__, loaded last); "tied-E": token_embed.weight in both places (a head that reads
    the embedding's weight in forward)."""
    T = idx.size(1)
    E, W = sd["token_embed.weight"], sd["lm_head.weight"]
    E, W = {"tied-W": (W, W), "tied-E": (E, E)}.get(head, (E, W))
    x = E.double()[idx.cpu()]
    if scale:
        x = x * math.sqrt(c["d_model"])
    # causal="diagonal": a mask that blocks the diagonal too (masks' mistake); "inverted":
    # ~causal_mask, which blocks the past and the diagonal and keeps the future
    mask = torch.ones(T, T, dtype=torch.bool).triu(int(causal is True)) if causal else None
    if causal == "inverted":
        mask = ~torch.ones(T, T, dtype=torch.bool).triu(1)
    for i in range(c["num_layers"]):
        x = llama_block(sd, f"blocks.{i}.", x, torch.arange(T), mask, c, **block)
    if final_norm:
        x = rms(x, sd["final_norm.weight"], c["eps"])
    return _lin(x, W)


# --------------------------------------------------------------------------- train


def held_out_loss(got, x) -> float:
    """The mean next-token loss (nats per character) of the student's trained model as it
    ran: its own logits, computed in its process, on the held-out windows the grader chose
    (x["eval_starts"]), against the next characters, computed here."""
    alphabet, data = probe.corpus()
    _, yb = probe.windows(data, x["eval_starts"].cpu(), probe.TRAIN_ARGS["seq_len"])
    logits = tensor(
        got,
        "held_out/logits",
        "the trained model's logits on the held-out windows",
        shape=(*yb.shape, len(alphabet)),
        floating=True,
    )
    return F.cross_entropy(logits.double().flatten(0, 1), yb.flatten()).item()


def trained_flags(got, x, candidates) -> dict:
    """The flags of the computation the student's model performs, to name it (never to score
    it): the first of `candidates` (the mistakes charged by other checks, and their
    combinations) whose logits on four held-out windows, with the trained weights, match the
    student's own; {} when none does (the correct computation, or one with no model here)."""
    logits = tensor(got, "logits", "the trained model's logits", floating=True)
    _, data = probe.corpus()
    state = {k.removeprefix("state/"): v.cpu() for k, v in got.items() if k.startswith("state/")}
    xb, _ = probe.windows(data, x["eval_starts"][:4].cpu(), probe.TRAIN_ARGS["seq_len"])
    for flags in candidates:
        with torch.no_grad():
            if close(logits, llama_logits(state, probe.TRAIN_CONFIG, xb, **flags).float()):
                return flags
    return {}
