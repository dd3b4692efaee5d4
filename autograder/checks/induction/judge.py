"""Judge side of induction.py's checks: misconceptions, models of wrong computations, verdicts.

The models below compute, in float64, what the exercise's functions compute (the given
attention-only model's forward, the two scores, the head choice, the two losses), with flags
for the known mistakes, so a mistake is recognised by the output it gives. head_scores and
loss_drop call the student's own score and loss functions: an output that is right but for a
mistake those functions' checks charge passes (replays, computed with the reference), so a
difference is charged once, where it is named. The training check trains the student's loop on
the probe side and measures the trained weights here, on held-out sequences the grader draws.
"""

from __future__ import annotations

import functools
import math

import torch

from ...core import verdicts
from ...core.check import CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, assert_close, close, model, tensor
from . import probe

CHECKS = CheckList("induction")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- models


@model
def forward64(state, config, tokens, ablate=()):
    """The given AttentionOnlyTransformer in float64: (logits (B, T, V), [weights per layer])."""
    sd = {k: v.double().cpu() for k, v in state.items()}
    H = config["num_heads"]
    B, T = tokens.shape
    x = sd["token_embed.weight"][tokens.cpu()] + sd["pos_embed.weight"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    all_weights = []
    for layer in range(config["num_layers"]):
        p = f"layers.{layer}."
        D = x.size(-1)

        def split(name, x=x, p=p, D=D):
            return (x @ sd[f"{p}{name}.weight"].T).reshape(B, T, H, D // H).transpose(1, 2)

        q, k, v = split("w_q"), split("w_k"), split("w_v")
        scores = (q @ k.transpose(-2, -1) / math.sqrt(D // H)).masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        heads = weights @ v  # (B, H, T, d_k)
        for lh in ablate:
            if lh[0] == layer:
                heads[:, lh[1]] = 0.0
        x = x + heads.transpose(1, 2).reshape(B, T, D) @ sd[f"{p}w_o.weight"].T
        all_weights.append(weights)
    return x @ sd["unembed.weight"].T, all_weights


@model
def previous64(weights, mistake=""):
    """The previous-token score (H,) of weights (B, H, T, T), or the mistake's."""
    w = weights.double()
    T = w.size(-1)
    if mistake == "diagonal":
        return w.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2))
    if mistake == "transposed":
        return w.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2))
    below = w.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T-1)
    if mistake == "includes-first":
        return below.sum(dim=2).mean(dim=0) / T
    if mistake == "summed":
        return below.sum(dim=2).mean(dim=0)
    return below.mean(dim=(0, 2))


@model
def induction64(weights, period, mistake=""):
    """The induction score (H,) of weights (B, H, 2P, 2P), or the mistake's."""
    w = weights.double()
    if mistake == "duplicate":  # key i - P: the earlier occurrence itself
        return w.diagonal(offset=-period, dim1=-2, dim2=-1).mean(dim=(0, 2))
    if mistake == "includes-first-half":  # the whole diagonal i - P + 1, from query P - 1
        return w.diagonal(offset=-(period - 1), dim1=-2, dim2=-1).mean(dim=(0, 2))
    queries = torch.arange(period, 2 * period)
    return w[..., queries, queries - period + 1].mean(dim=(0, 2))


# Each mistake's flag (the models' argument) and its misconception.
PREVIOUS_MISTAKES = {
    "includes-first": MISTAKES["induction-prev-includes-first"],
    "diagonal": MISTAKES["induction-prev-diagonal"],
    "transposed": MISTAKES["induction-prev-transposed"],
    "summed": MISTAKES["induction-prev-summed"],
}
INDUCTION_MISTAKES = {
    "duplicate": MISTAKES["induction-ind-duplicate"],
    "includes-first-half": MISTAKES["induction-ind-includes-first-half"],
}


@model
def losses64(logits, tokens, period, mistake=""):
    """(first, repeated) mean next-token losses in float64, or the mistake's."""
    lg = logits.double()
    if mistake == "not-shifted":  # position t scored on token t
        lp = lg.log_softmax(dim=-1).gather(-1, tokens[..., None]).squeeze(-1)[:, 1:]
    elif mistake == "logits":  # the raw logit of the target, not its log-probability
        lp = lg[:, :-1].gather(-1, tokens[:, 1:, None]).squeeze(-1)
    else:
        lp = lg[:, :-1].log_softmax(dim=-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
    loss = -lp  # (B, T-1): entry t is the loss of target t + 1
    first, repeated = loss[:, : period - 1].mean(), loss[:, period:].mean()
    if mistake == "boundary":
        repeated = loss[:, period - 1 :].mean()
    if mistake == "swapped":
        first, repeated = repeated, first
    return torch.stack([first, repeated])


LOSS_MISTAKES = {
    "logits": MISTAKES["induction-loss-logits"],
    "not-shifted": MISTAKES["induction-loss-not-shifted"],
    "boundary": MISTAKES["induction-loss-boundary"],
    "swapped": MISTAKES["induction-loss-swapped"],
}


@model
def heads64(previous, induction, mistake=""):
    """find_heads' answer as an int64 tensor [l_ind, h_ind, l_prev, h_prev], or the mistake's."""
    H = induction.size(1)
    if mistake == "divmod-by-layers":  # the flat index split by L, the table's rows
        H = induction.size(0)
    if mistake == "any-layer":
        layer, head = divmod(int(induction.argmax()), H)
    else:
        layer, head = divmod(int(induction[1:].argmax()), H)
        if mistake != "no-row-offset":  # (the row dropped is added back)
            layer += 1
    if mistake == "previous-any-layer":
        rows = previous
    elif mistake == "previous-own-layer":  # the induction head's own layer included
        rows = previous[: layer + 1]
    else:
        rows = previous[:layer]  # the layers before the induction head's
    if rows.numel() == 0:  # any-layer found layer 0: no layer before it (the pair is judged)
        rows = previous
    p_layer, p_head = divmod(int(rows.argmax()), H)
    if mistake == "swapped":
        return torch.tensor([head, layer, p_head, p_layer])
    return torch.tensor([layer, head, p_layer, p_head])


@model
def drops64(state, config, tokens, period, ablations, loss_mistake="", ablate_mistake=""):
    """loss_drop for each head set of `ablations` (float64), with the mistakes flagged."""
    drops = []
    for heads in ablations:
        heads = [tuple(h) for h in heads]
        if ablate_mistake == "ignored":
            heads = []
        elif ablate_mistake == "swapped":
            heads = [(h, lay) for lay, h in heads]
        logits, _ = forward64(state, config, tokens, heads)
        first, repeated = losses64(logits, tokens, period, loss_mistake)
        drops.append(repeated - first if ablate_mistake == "sign" else first - repeated)
    return torch.stack(drops)


# --------------------------------------------------------------------------- repeated_tokens

TOKENS = CHECKS.exercise("repeated_tokens", probe=probe.probe_tokens)


@TOKENS.check("tokens", inputs=probe.inputs_tokens)
def verdict_tokens(got, want, x):
    B, P = x["batch_size"], x["period"]
    tokens = tensor(got, "tokens", "the tokens", shape=(B, 2 * P), dtype=torch.int64)
    if close(tokens, want["tokens"]):
        return
    if not torch.equal(tokens[:, P:], tokens[:, :P]):
        raise Failure(MISTAKES["induction-tokens-not-repeated"], P=P)
    raise Failure(MISTAKES["induction-tokens-other-draw"], B=B, P=P, V=x["vocab_size"])


# --------------------------------------------------------------------------- the two scores

PREVIOUS = CHECKS.exercise("previous_token_scores", probe=probe.probe_previous)


@PREVIOUS.check("previous-token", inputs=probe.inputs_weights)
def verdict_previous(got, want, x):
    H = x["weights"].size(1)
    scores = tensor(got, "scores", "the previous-token scores", shape=(H,), floating=True)
    candidates = [
        (
            mistake,
            functools.partial(lambda m: previous64(x["weights"], m).float(), m),
            {"T": x["weights"].size(-1)},
        )
        for m, mistake in PREVIOUS_MISTAKES.items()
    ]
    assert_close(scores, want["scores"], "the previous-token scores", candidates)


INDUCTION = CHECKS.exercise("induction_scores", probe=probe.probe_induction)


@INDUCTION.check("induction", inputs=probe.inputs_weights)
def verdict_induction(got, want, x):
    H, P = x["weights"].size(1), x["period"]
    scores = tensor(got, "scores", "the induction scores", shape=(H,), floating=True)
    candidates = [
        (
            mistake,
            functools.partial(lambda m: induction64(x["weights"], P, m).float(), m),
            {"P": P},
        )
        for m, mistake in INDUCTION_MISTAKES.items()
    ]
    assert_close(scores, want["scores"], "the induction scores", candidates)


# --------------------------------------------------------------------------- head_scores


def _tables(x, previous="", induction=""):
    """The (previous, induction) tables (L, H) of the check's model, with score mistakes."""
    _, all_weights = forward64(x["state"], x["config"], x["tokens"])
    prev = torch.stack([previous64(w, previous) for w in all_weights]).float()
    ind = torch.stack([induction64(w, x["period"], induction) for w in all_weights]).float()
    return prev, ind


def _score_replays(x):
    """The tables with each mistake the two score checks charge (by name)."""
    out = {}
    for m in PREVIOUS_MISTAKES:
        out[f"previous/{m}"] = _tables(x, previous=m)[0]
    for m in INDUCTION_MISTAKES:
        out[f"induction/{m}"] = _tables(x, induction=m)[1]
    return out


HEAD_SCORES = CHECKS.exercise("head_scores", probe=probe.probe_head_scores)


def _a_score_table(table) -> bool:
    """Whether `table` can be a table of scores: finite, in [0, 1] (means of attention
    weights), not one constant (what an output that computes nothing gives)."""
    if not isinstance(table, torch.Tensor) or table.numel() < 2 or not table.is_floating_point():
        return False
    if not torch.isfinite(table).all() or table.min() < 0 or table.max() > 1:
        return False
    return not bool((table == table.flatten()[0]).all())


@HEAD_SCORES.check("head-scores", inputs=probe.inputs_trained, replays=_score_replays)
def verdict_head_scores(got, want, x):
    c = x["config"]
    shape = (c["num_layers"], c["num_heads"])
    previous = tensor(got, "previous", "the previous-token table", shape=shape, floating=True)
    induction = tensor(got, "induction", "the induction table", shape=shape, floating=True)
    if close(previous, want["induction"]) and close(induction, want["previous"]):
        raise Failure(MISTAKES["induction-scores-swapped"])
    for what, table, name in (
        ("the previous-token table", previous, "previous"),
        ("the induction table", induction, "induction"),
    ):
        if close(table, want[name]):
            continue
        charged = [k for k in want if k.startswith(f"replay/{name}/")]
        if any(close(table, want[k]) for k in charged):
            continue  # a score mistake, charged by that score's own check
        own = got.get(f"own/{name}")
        if _a_score_table(own) and close(table, own) and not close(own, want[name]):
            continue  # the student's own score function, wrong here: its own check charges it
        if close(table, want[name].T) or any(close(table, want[k].T) for k in charged):
            raise Failure(MISTAKES["induction-scores-transposed"], what=what)
        assert_close(table, want[name], what)


# --------------------------------------------------------------------------- find_heads

FIND_HEADS = CHECKS.exercise("find_heads", probe=probe.probe_find_heads)
# (misconception, flag, which of the four ints [l_ind, h_ind, l_prev, h_prev] it explains:
# the rest must be right, or equal what the same mistake gives)
HEAD_MISTAKES = (
    (MISTAKES["induction-find-pair-swapped"], "swapped", slice(0, 4)),
    (MISTAKES["induction-find-any-layer"], "any-layer", slice(0, 2)),
    (MISTAKES["induction-find-row-offset"], "no-row-offset", slice(0, 2)),
    (MISTAKES["induction-find-divmod-by-layers"], "divmod-by-layers", slice(0, 2)),
    (MISTAKES["induction-find-previous-not-before"], "previous-own-layer", slice(2, 4)),
    (MISTAKES["induction-find-previous-not-before"], "previous-any-layer", slice(2, 4)),
)


@FIND_HEADS.check("find-heads", inputs=probe.inputs_tables)
def verdict_find_heads(got, want, x):
    L, H = x["induction"].shape
    if "empty-argmax" in got:  # an argmax over no earlier layer: the induction head in layer 0
        try:
            layer_0 = int(heads64(x["previous"], x["induction"], "any-layer")[0]) == 0
        except ModelUnavailable:  # the student copy: not named there
            layer_0 = False
        error = f"no heads but an error ({got['empty-argmax']})"
        if layer_0:
            raise Failure(MISTAKES["induction-find-any-layer"], got=error, L=L, H=H)
        raise Failure(MISTAKES["induction-find-wrong"], got=error, L=L, H=H)
    ind = tensor(got, "induction", "the induction head", shape=(2,), dtype=torch.int64)
    prev = tensor(got, "previous", "the previous-token head", shape=(2,), dtype=torch.int64)
    answer = torch.cat([ind, prev])
    expected = torch.cat([want["induction"], want["previous"]])
    if torch.equal(answer, expected):
        return
    shown = {"got": tuple(answer.tolist()), "L": L, "H": H}
    # First a mistake that gives all four ints, then one that gives the part it explains:
    # two mistakes can pick the same induction head in a table (divmod by L and no row
    # offset, say), and the previous-token head then tells them apart.
    for whole in (True, False):
        for mistake, flag, part in HEAD_MISTAKES:
            part = slice(0, 4) if whole else part
            try:
                wrong = heads64(x["previous"], x["induction"], flag)
            except ModelUnavailable:  # the student copy: the mistake is not named there
                continue
            if torch.equal(answer[part], wrong[part]) and not torch.equal(
                answer[part], expected[part]
            ):
                raise Failure(mistake, **shown)
    raise Failure(MISTAKES["induction-find-wrong"], **shown)


# --------------------------------------------------------------------------- in_context_losses

LOSSES = CHECKS.exercise("in_context_losses", probe=probe.probe_losses)


def _pair(got) -> torch.Tensor:
    """(first, repeated) as one tensor of 2, after checking each is a 0-dim float tensor."""
    first = tensor(got, "first", "the first half's loss", shape=(), floating=True)
    repeated = tensor(got, "repeated", "the repeated half's loss", shape=(), floating=True)
    return torch.stack([first.float(), repeated.float()])


@LOSSES.check("losses", inputs=probe.inputs_losses)
def verdict_losses(got, want, x):
    pair = _pair(got)
    expected = torch.stack([want["first"], want["repeated"]]).float()
    candidates = [
        (
            mistake,
            functools.partial(
                lambda m: losses64(x["logits"], x["tokens"], x["period"], m).float(), m
            ),
            {"P": x["period"]},
        )
        for m, mistake in LOSS_MISTAKES.items()
    ]
    assert_close(pair, expected, "(first, repeated)", candidates)


# --------------------------------------------------------------------------- loss_drop


def _drops(x, loss_mistake="", ablate_mistake=""):
    args = (x["state"], x["config"], x["tokens"], x["period"], x["ablations"])
    return drops64(*args, loss_mistake, ablate_mistake).float()


def _drop_replays(x):
    """For each mistake the losses check charges (by name): the drops it gives, and the pair
    (first, repeated) it gives on the intact model's logits."""
    logits, _ = forward64(x["state"], x["config"], x["tokens"])
    out = {m: _drops(x, loss_mistake=m) for m in LOSS_MISTAKES}
    for m in LOSS_MISTAKES:
        out[f"pair/{m}"] = losses64(logits, x["tokens"], x["period"], m).float()
    return out


LOSS_DROP = CHECKS.exercise("loss_drop", probe=probe.probe_ablation)
ABLATE_MISTAKES = {
    "ignored": MISTAKES["induction-ablate-ignored"],
    "sign": MISTAKES["induction-ablate-sign"],
    "swapped": MISTAKES["induction-ablate-swapped"],
}


@LOSS_DROP.check("ablation", inputs=probe.inputs_ablation, replays=_drop_replays)
def verdict_ablation(got, want, x):
    n = len(x["ablations"])
    drops = tensor(got, "drops", "the loss drops", shape=(n,), floating=True)
    if close(drops, want["drops"]):
        return
    own = got.get("own_losses")
    for m in LOSS_MISTAKES:  # a loss mistake the student's own in_context_losses makes:
        if (  # charged by the losses check, not here
            isinstance(own, torch.Tensor)
            and close(own, want[f"replay/pair/{m}"])
            and close(drops, want[f"replay/{m}"])
        ):
            return
    candidates = [
        (mistake, functools.partial(_drops, x, "", m), {}) for m, mistake in ABLATE_MISTAKES.items()
    ]
    assert_close(drops, want["drops"], "the loss drops", candidates)


# --------------------------------------------------------------------------- training (slow)

# Measured with tools/measure_train.py --check induction.train (docs/induction.md): over 302
# seeds the solution's trained model (probe.TRAIN_STEPS steps of probe.TRAIN_BATCH) had a
# previous-token head of score 0.42 .. 0.76 in layer 0, an induction head of score
# 0.59 .. 0.86 in layer 1, and an in-context loss drop of 1.87 .. 2.78 nats on the held-out
# sequences. We ask for about half of the lowest (a margin for other correct ways of
# writing the loop: float rounding changes the run). Before training every score is near its
# uniform value (about 0.15) and the drop is near 0.
# Each measure (as the message names it) and the least it must reach:
TRAIN_MINIMUMS = {"prev": 0.2, "ind": 0.35, "drop": 1.0}


def trained_measures(got, x) -> tuple[float, float, float]:
    """(best previous-token score in layer 0, best induction score in layers 1 .., drop) of
    the trained weights in `got`, on the held-out sequences, computed here."""
    state = {k.removeprefix("state/"): v for k, v in got.items() if k.startswith("state/")}
    logits, all_weights = forward64(state, x["config"], x["tokens"])
    prev = float(previous64(all_weights[0]).max())
    ind = float(torch.stack([induction64(w, x["period"]) for w in all_weights[1:]]).max())
    first, repeated = losses64(logits, x["tokens"], x["period"])
    return prev, ind, float(first - repeated)


def own_measures(got, x) -> tuple[float, float, float]:
    """The same, from the student's own head_scores and loss_drop of the trained model (what
    the student copy, which has no model, measures)."""
    c = x["config"]
    shape = (c["num_layers"], c["num_heads"])
    prev = tensor(got, "own/previous", "the trained model's previous-token table", shape=shape)
    ind = tensor(got, "own/induction", "the trained model's induction table", shape=shape)
    drop = tensor(got, "own/drop", "the trained model's loss drop", shape=())
    return float(prev[0].max()), float(ind[1:].max()), float(drop)


TRAIN = CHECKS.exercise("train_induction", probe=probe.probe_train)


@TRAIN.check("train", inputs=probe.inputs_train, timeout=60.0, slow=True)
@no_reference
def verdict_train(got, want, x):
    steps = probe.TRAIN_STEPS
    losses = tensor(got, "losses", "the training losses", shape=(steps,), floating=True)
    state = verdicts.trained_state(got, x["state"], "the given model's own parameters")
    for k, v in x["state"].items():  # the trained weights: the given model's shapes, floats
        tensor(got, f"state/{k}", f"the trained {k}", shape=v.shape, floating=True)
    if verdicts.unchanged(state, x["state"]):
        raise Failure(
            MISTAKES["induction-not-trained"],
            detail=f"its weights did not change in {steps} steps",
        )
    try:
        prev, ind, drop = trained_measures(got, x)
    except ModelUnavailable:  # the student copy: the student's own measures
        prev, ind, drop = own_measures(got, x)
    measures = {"prev": prev, "ind": ind, "drop": drop}
    finite = all(math.isfinite(v) for v in measures.values()) and bool(losses.isfinite().all())
    if not finite or any(measures[k] < least for k, least in TRAIN_MINIMUMS.items()):
        minimums = {f"min_{k}": least for k, least in TRAIN_MINIMUMS.items()}
        raise Failure(MISTAKES["induction-no-circuit"], **measures, **minimums)
