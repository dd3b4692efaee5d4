"""Probe side of induction.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
The model (AttentionOnlyTransformer) is given code, the same in the stub and the solution:
the checks build it from the student's module and load the grader's weights into it.

The grader's weights: a trained two-layer model (probe_weights.py, fixed data), with the
heads of each layer permuted by the check's seed (so no head index can be hard-coded), and
models of random weights for the score tables. Score functions are judged on random causal
attention patterns; find_heads on random score tables built so that each classic slip
(an induction head in layer 0, a previous-token head at or after the induction head's layer)
picks another head.
"""

from __future__ import annotations

import math
import operator

import torch

from ...core.check import WRONG_TYPE, Failure
from ...run.probing import pair, randn, weights_of
from . import probe_weights


def _draw(gen, low: int, high: int) -> int:
    """An int in [low, high], from the check's generator (every size depends on the seed)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


# --------------------------------------------------------------------------- inputs


def inputs_tokens(gen):
    return {
        "batch_size": _draw(gen, 2, 4),
        "period": _draw(gen, 3, 8),
        "vocab_size": _draw(gen, 5, 20),
        "seed": _draw(gen, 0, 2**31 - 2),
    }


def inputs_weights(gen):
    """Causal attention weights (B, H, T = 2P, T) of random scores, and P."""
    B, H, P = _draw(gen, 2, 3), _draw(gen, 2, 4), _draw(gen, 3, 6)
    T = 2 * P
    scores = randn(gen, B, H, T, T, scale=2.0)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    return {"weights": scores.masked_fill(mask, float("-inf")).softmax(dim=-1), "period": P}


def permuted_state(gen) -> dict[str, torch.Tensor]:
    """The grader's trained weights with the heads of each layer in an order drawn from gen:
    head h's rows of w_q, w_k, w_v and columns of w_o move together, so the model computes
    the same function with its heads renumbered."""
    state = probe_weights.state()
    c = probe_weights.CONFIG
    H, d_k = c["num_heads"], c["d_model"] // c["num_heads"]
    for layer in range(c["num_layers"]):
        order = torch.randperm(H, generator=gen)
        features = (order[:, None] * d_k + torch.arange(d_k)).flatten()  # new head h = old order[h]
        for name in ("w_q", "w_k", "w_v"):
            key = f"layers.{layer}.{name}.weight"
            state[key] = state[key][features].clone()
        key = f"layers.{layer}.w_o.weight"
        state[key] = state[key][:, features].clone()
    return state


def _repeated(gen, B: int, P: int, V: int) -> torch.Tensor:
    first = torch.randint(V, (B, P), generator=gen)
    return torch.cat([first, first], dim=1)


def inputs_trained(gen):
    """The grader's trained model (heads permuted), a batch of repeated tokens and P."""
    B, P = _draw(gen, 16, 32), _draw(gen, 6, 14)
    return {
        "config": dict(probe_weights.CONFIG),
        "state": permuted_state(gen),
        "tokens": _repeated(gen, B, P, probe_weights.CONFIG["vocab_size"]),
        "period": P,
    }


def inputs_ablation(gen):
    """inputs_trained, and the head sets to ablate: none, one head of layer 1, one head of
    layer 0, both heads of layer 1."""
    x = inputs_trained(gen)
    one, zero = _draw(gen, 0, 1), _draw(gen, 0, 1)
    x["ablations"] = [[], [[1, one]], [[0, zero]], [[1, 0], [1, 1]]]
    return x


def inputs_tables(gen):
    """Score tables (L, H) of uniform draws in [0, 1), with three entries set: the induction
    head (induction 2 in a layer l >= 1), a decoy in layer 0 (induction 3: only an argmax over
    every layer picks it), and a decoy in layer l (previous 3: only an argmax that reaches
    the induction head's own layer, or every layer, picks it). L != H and the induction head
    in a layer >= 2: its flat index in the table without row 0 is then at least H, where a
    divmod by L (not H) gives another (layer, head) whatever the draw."""
    L, H = _draw(gen, 3, 5), _draw(gen, 2, 4)
    H += H >= L  # never L
    previous = torch.rand(L, H, generator=gen)
    induction = torch.rand(L, H, generator=gen)
    layer = _draw(gen, 2, L - 1)
    induction[layer, _draw(gen, 0, H - 1)] = 2.0
    induction[0, _draw(gen, 0, H - 1)] = 3.0
    previous[layer, _draw(gen, 0, H - 1)] = 3.0
    return {"previous": previous, "induction": induction}


def inputs_losses(gen):
    B, P, V = _draw(gen, 2, 4), _draw(gen, 3, 8), _draw(gen, 5, 12)
    return {
        "logits": randn(gen, B, 2 * P, V, scale=2.0),
        "tokens": _repeated(gen, B, P, V),
        "period": P,
    }


# --------------------------------------------------------------------------- probes


def probe_tokens(mod, x):
    gen = torch.Generator().manual_seed(x["seed"])
    return {"tokens": mod.repeated_tokens(x["batch_size"], x["period"], x["vocab_size"], gen)}


def probe_previous(mod, x):
    return {"scores": mod.previous_token_scores(x["weights"])}


def probe_induction(mod, x):
    return {"scores": mod.induction_scores(x["weights"], x["period"])}


def _model(mod, x):
    """The student's module's (given) model with the check's weights, in eval mode."""
    model = mod.AttentionOnlyTransformer(**x["config"])
    model.load_state_dict(x["state"])
    return model.eval()


def probe_head_scores(mod, x):
    """head_scores' tables; and the student's own score functions applied to the same
    model's weights, layer by layer (so that the judge leaves a score function's mistake to
    its own check; left out when one raises)."""
    model = _model(mod, x)
    result = mod.head_scores(model, x["tokens"], x["period"])
    previous, induction = pair(result, "head_scores' result", "(previous, induction)")
    got = {"previous": previous, "induction": induction}
    try:
        with torch.no_grad():
            _, weights = model(x["tokens"])
        got["own/previous"] = torch.stack([mod.previous_token_scores(w) for w in weights])
        got["own/induction"] = torch.stack([mod.induction_scores(w, x["period"]) for w in weights])
    except Exception:  # noqa: BLE001  (no exemption then: the tables are judged as they are)
        pass
    return got


def _head(value, what: str) -> torch.Tensor:
    """A head (layer, head) as an int64 tensor of 2, or a Failure saying what was returned.
    Any integers do (Python, NumPy or 0-dim integer tensors: whatever has __index__)."""
    if isinstance(value, torch.Tensor) and value.numel() == 2 and not value.is_floating_point():
        value = tuple(int(v) for v in value.flatten().tolist())
    try:
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise TypeError
        pair = [operator.index(v) for v in value]
    except TypeError:
        got = f"a {type(value).__name__}"
        raise Failure(
            WRONG_TYPE, what=what, expected="a pair (layer, head) of ints", got=got
        ) from None
    return torch.tensor(pair, dtype=torch.int64)


def probe_find_heads(mod, x):
    try:
        result = mod.find_heads(x["previous"].clone(), x["induction"].clone())
    except (RuntimeError, IndexError) as e:  # argmax over no layer at all: a finding
        text = (str(e).splitlines() or [""])[0]
        if "numel() == 0" not in text and "empty" not in text:
            raise
        return {"empty-argmax": text[:200]}
    induction, previous = pair(result, "find_heads' result", "(induction_head, previous_head)")
    return {
        "induction": _head(induction, "the induction head"),
        "previous": _head(previous, "the previous-token head"),
    }


def probe_losses(mod, x):
    result = mod.in_context_losses(x["logits"], x["tokens"], x["period"])
    first, repeated = pair(result, "in_context_losses' result", "(first, repeated)")
    return {"first": first, "repeated": repeated}


def _drop(value) -> torch.Tensor:
    if not isinstance(value, torch.Tensor) or value.numel() != 1:
        got = f"a {type(value).__name__}"
        if isinstance(value, torch.Tensor):
            got = f"a tensor of shape {tuple(value.shape)}"
        raise Failure(WRONG_TYPE, what="loss_drop's result", expected="a 0-dim tensor", got=got)
    return value.detach().reshape(())


def probe_ablation(mod, x):
    """The student's loss_drop for each head set, and the student's own in_context_losses
    on the intact model's logits (so that the judge exempts a loss mistake only where the
    student's loss function makes it; left out when that raises)."""
    model = _model(mod, x)
    drops = [
        _drop(mod.loss_drop(model, x["tokens"], x["period"], [tuple(h) for h in heads]))
        for heads in x["ablations"]
    ]
    got = {"drops": torch.stack(drops)}
    try:
        with torch.no_grad():
            logits, _ = model(x["tokens"])
        first, repeated = mod.in_context_losses(logits, x["tokens"], x["period"])
        got["own_losses"] = torch.stack([_drop(first), _drop(repeated)]).float()
    except Exception:  # noqa: BLE001  (no exemption then: the drops are judged as they are)
        pass
    return got


# --------------------------------------------------------------------------- train (slow)

# The training run: the given model with V = 16, D = 32, H = 2, L = 2, max_len = 32,
# batches of TRAIN_BATCH (train_induction's batch_size) and its other defaults (periods
# 6 .. 16, AdamW lr 1e-2), TRAIN_STEPS steps: about 1.7 CPU-s (docs/induction.md). The
# circuit forms at a step that varies with the seed: at 400 steps of 32 the solution itself
# had none yet on about 2 seeds in 100 (tools/measure_train.py --check induction.train);
# 800 steps of 16, at about 1.4 times the cost, formed it on all 302 seeds measured, none
# near the thresholds. The judge measures the trained weights on held-out sequences the
# grader draws (period 12), which training never sees. D is not the stored model's
# (probe_weights.py, D = 24): its trained weights do not fit this model.
TRAIN_CONFIG = {"vocab_size": 16, "d_model": 32, "num_heads": 2, "num_layers": 2, "max_len": 32}
TRAIN_STEPS = 800
TRAIN_BATCH = 16
HELD_OUT_PERIOD = 12


def train_shapes(c: dict) -> dict[str, tuple[int, int]]:
    """The given model's parameter names and shapes, in creation order."""
    V, D = c["vocab_size"], c["d_model"]
    shapes = {"token_embed.weight": (V, D), "pos_embed.weight": (c["max_len"], D)}
    for layer in range(c["num_layers"]):
        shapes.update({f"layers.{layer}.{w}.weight": (D, D) for w in ("w_q", "w_k", "w_v", "w_o")})
    shapes["unembed.weight"] = (V, D)
    return shapes


def initial_state(gen) -> dict[str, torch.Tensor]:
    """PyTorch's own initialisation, drawn from gen: embeddings N(0, 1), the linear maps
    uniform in ±1/√fan_in."""
    state = {}
    for name, shape in train_shapes(TRAIN_CONFIG).items():
        if name in ("token_embed.weight", "pos_embed.weight"):
            state[name] = randn(gen, *shape)
        else:
            bound = 1.0 / math.sqrt(shape[1])
            draw = torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1
            state[name] = draw.mul(bound).float()
    return state


def inputs_train(gen):
    return {
        "config": TRAIN_CONFIG,
        "state": initial_state(gen),
        "train_seed": _draw(gen, 0, 2**31 - 2),
        "tokens": _repeated(gen, 64, HELD_OUT_PERIOD, TRAIN_CONFIG["vocab_size"]),
        "period": HELD_OUT_PERIOD,
    }


def probe_train(mod, x):
    """Run the student's train_induction on the given model (the grader's initial weights
    and generator seed); send back its losses and trained weights (the judge measures the
    model itself, in the grading process) and, for the student copy, which has no model,
    the student's own head_scores and loss_drop of the trained model on the held-out
    sequences (left out when those raise)."""
    model = _model(mod, x).train()
    gen = torch.Generator().manual_seed(x["train_seed"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: torch's thread pool costs more than it gains
    try:
        losses = mod.train_induction(model, TRAIN_STEPS, batch_size=TRAIN_BATCH, generator=gen)
    finally:
        torch.set_num_threads(threads)
    if not isinstance(losses, (list, tuple, torch.Tensor)) or len(losses) != TRAIN_STEPS:
        raise Failure(
            WRONG_TYPE,
            what="train_induction's result",
            expected=f"a list of {TRAIN_STEPS} losses",
            got=f"a {type(losses).__name__}",
        )
    got: dict = {"losses": torch.tensor([float(v) for v in losses], dtype=torch.float64)}
    got.update({f"state/{k}": v for k, v in weights_of(model, x["state"]).items()})
    model.eval()
    try:
        previous, induction = mod.head_scores(model, x["tokens"], x["period"])
        drop = mod.loss_drop(model, x["tokens"], x["period"])
        got.update({"own/previous": previous, "own/induction": induction, "own/drop": drop})
    except Exception:  # noqa: BLE001  (the student copy's mirror only; the judge measures)
        pass
    return got
