"""Judge side of diagnostics.py's W_O checks: misconceptions, the recall task and training
loop replayed with each named mistake, verdicts.

The full measurement (300 steps, several seeds) is tools/wo_experiment.py; its numbers are
in docs/multihead.md.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...core.check import WRONG_TYPE, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import assert_close, close, model, tensor
from ...run.probing import one_torch_thread
from ...trusted.multihead import MultiHeadAttention
from . import probe_wo as probe

CHECKS = CheckList("diagnostics")

# Loosened from float32's 1e-5: an equivalent training loop (the same steps, with operations
# ordered differently) rounds differently, and Adam carries those differences from step to step.
CURVE_TOL = {"atol": 1e-3, "rtol": 1e-3}

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders


def _as_curve(got, key, what, steps):
    value = tensor(got, key, what)
    if tuple(value.shape) != (steps,):
        tensor(got, key, what, shape=(steps,))  # raises the shape failure
    return value.to(torch.float32)


# --------------------------------------------------------------------------- models
# The task and the model are given code in diagnostics.py (no TODO): copied here, on the
# trusted MultiHeadAttention, so the named mistakes can be replayed without solutions/ (a kit
# test proves these give the reference curve). The training loop and fixing W_O are the
# exercises: models, left out of the student copy, where those mistakes go unnamed.

KEYS, VALUES, PAIRS = 16, 16, 6


def recall_batch(batch_size, num_pairs=PAIRS, generator=None):
    B, n = batch_size, num_pairs
    keys = torch.rand(B, KEYS, generator=generator).argsort(dim=-1)[:, :n]
    values = torch.randint(VALUES, (B, n), generator=generator)
    which = torch.randint(n, (B,), generator=generator)
    rows = torch.arange(B)
    keys = torch.cat([keys, keys[rows, which][:, None]], dim=1)
    values = torch.cat([values, torch.full((B, 1), VALUES)], dim=1)
    return keys, values, values[rows, which]


class RecallModel(nn.Module):
    def __init__(self, d_model=32, num_heads=4):
        super().__init__()
        self.key_embed = nn.Embedding(KEYS, d_model)
        self.value_embed = nn.Embedding(VALUES + 1, d_model)
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.norm = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, VALUES)

    def forward(self, keys, values):
        x = self.key_embed(keys) + self.value_embed(values)
        x = x + self.attn(x)[0]
        return self.readout(self.norm(x[:, -1]))


@model
def train(net, steps, *, zero_grad=True, after_step=False, seed=0):
    """The reference loop, or the loop with one named mistake."""
    gen = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=3e-3)
    losses = []
    for _ in range(steps):
        keys, values, targets = recall_batch(32, generator=gen)
        loss = F.cross_entropy(net(keys, values), targets)
        if zero_grad:
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if after_step:
            with torch.no_grad():
                loss = F.cross_entropy(net(keys, values), targets)
        losses.append(loss.item())
    return torch.tensor(losses)


@model
def fresh(seed=0, identity=False, frozen=False, attn_frozen=False):
    """A fresh model; identity: W_O set to the identity, frozen when `frozen`, and the whole
    attention module frozen with it when `attn_frozen` (wo-freezes-more)."""
    torch.manual_seed(seed)
    net = RecallModel()
    if identity:
        with torch.no_grad():
            net.attn.w_o.weight.copy_(torch.eye(net.attn.w_o.weight.size(0)))
        net.attn.w_o.weight.requires_grad_(not frozen)
        if attn_frozen:
            net.attn.requires_grad_(False)
    return net


@model
def _curve(seed, steps, *, identity=False, attn_frozen=False, **mistake):
    """The losses of `steps` steps of the loop (with `mistake`) from a fresh model: one
    answer, so the student copy can replay it (a model returned by fresh() cannot be)."""
    with one_torch_thread():
        net = fresh(seed, identity=identity, attn_frozen=attn_frozen)
        return train(net, steps, seed=seed, **mistake)


# --------------------------------------------------------------------------- verdicts


FIX_WO_TO_IDENTITY = CHECKS.exercise("fix_wo_to_identity", probe=probe.probe_identity)


@FIX_WO_TO_IDENTITY.check("wo-identity", inputs=probe.inputs_identity)
@no_reference
def verdict_identity(got, want, x):
    D = x["D"]
    zero = torch.zeros(D)
    weight = tensor(got, "weight", "w_o.weight", shape=(D, D))
    bias = tensor(got, "bias", "w_o's bias", shape=(D,))
    if not close(weight, torch.eye(D)) or not close(bias, zero):
        raise Failure(MISTAKES["wo-not-identity"])
    after = tensor(got, "after", "w_o.weight", shape=(D, D))
    bias_after = tensor(got, "bias_after", "w_o's bias", shape=(D,))
    if got.get("requires_grad") is not False or not close(after, torch.eye(D)):
        raise Failure(MISTAKES["wo-not-frozen"])
    if not close(bias_after, zero):
        raise Failure(MISTAKES["wo-not-frozen"])
    if got.get("frozen_too"):
        raise Failure(MISTAKES["wo-freezes-more"], frozen=got["frozen_too"])


TRAIN_RECALL = CHECKS.exercise("train_recall", probe=probe.probe_train)


@TRAIN_RECALL.check("wo-train", inputs=probe.inputs_run)
def verdict_train(got, want, x):
    losses = got.get("losses")
    if isinstance(losses, (list, tuple)):
        raise Failure(WRONG_TYPE, what="train_recall's result", expected="a tensor", got="a list")
    losses = _as_curve(got, "losses", "train_recall's loss curve", x["steps"])

    def variant(**kw):
        return lambda: _curve(x["seed"], x["steps"], **kw)

    assert_close(
        losses,
        want["losses"],
        "the loss curve",
        [
            (MISTAKES["train-no-zero-grad"], variant(zero_grad=False), {}),
            (MISTAKES["train-loss-after-step"], variant(after_step=True), {}),
        ],
        tol=CURVE_TOL,
    )


WO_EXPERIMENT = CHECKS.exercise("wo_experiment", probe=probe.probe_experiment)


@WO_EXPERIMENT.check("wo-experiment", inputs=probe.inputs_run)
def verdict_experiment(got, want, x):
    if "type" in got:
        raise Failure(WRONG_TYPE, what="wo_experiment's result", expected="a dict", got=got["type"])
    steps = x["steps"]
    learned = _as_curve(got, "learned", "the 'learned' curve", steps)
    identity = _as_curve(got, "identity", "the 'identity' curve", steps)
    tol = CURVE_TOL
    if close(learned, want["identity"], tol) and close(identity, want["learned"], tol):
        raise Failure(MISTAKES["wo-curves-swapped"])
    if not close(learned, want["learned"], tol):
        raise Failure(MISTAKES["wo-runs-differ"], which="'learned'")
    if not close(identity, want["identity"], tol):
        if close(identity, _curve(x["seed"], steps, identity=True), tol):
            raise Failure(MISTAKES["wo-not-frozen"])
        if close(identity, _curve(x["seed"], steps, identity=True, attn_frozen=True), tol):
            raise Failure(MISTAKES["wo-freezes-more"], frozen="w_q.weight,w_k.weight,w_v.weight")
        raise Failure(MISTAKES["wo-runs-differ"], which="'identity'")
