"""Probe side of llama.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
While llama is graded, the student's imports from rotary, modern_blocks, gqa, masks and
attention get the trusted stand-ins (the student copy has none for rotary, modern_blocks and
gqa: there the student's own modules are used, and the report says so). Every model gets the
grader's weights (load_state_dict), built here by name and shape alone, with no model code.

Sizes: H = 4 query heads and H_kv = 2 key/value heads (tiled and grouped pairings differ),
d_k ∈ {4, 6}, a rotary base other than 10000 (so a forgotten self.base shows), positions in
the attention and block checks drawn at random (so arange(T) in their place shows).
"""

from __future__ import annotations

import math
from typing import TypedDict

import torch
from torch import nn

from ...run.probing import corpus, fits, gradients, load_weights, logits_of, pair, randn, weights_of

# --------------------------------------------------------------------------- sizes and weights


def _draw(gen, low: int, high: int) -> int:
    """An int in [low, high], from the check's generator (every size depends on the seed)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def config_of(gen, num_kv_heads: int = 2) -> dict:
    """MiniLlama's keyword arguments (all but vocab_size, which the inputs carry)."""
    return {
        "d_model": 4 * (4 + 2 * _draw(gen, 0, 1)),  # 16 or 24: d_k = 4 or 6
        "num_heads": 4,
        "num_kv_heads": num_kv_heads,
        "num_layers": 2,
        "d_ff": _draw(gen, 20, 28),
        "max_len": 12,
        "base": (100.0, 500.0)[_draw(gen, 0, 1)],
        "eps": 1e-6,
    }


def block_shapes(config: dict, prefix: str = "") -> dict[str, tuple[int, ...]]:
    """The parameter names and shapes of one LlamaBlock, in creation order."""
    D, d_ff = config["d_model"], config["d_ff"]
    shapes: dict[str, tuple[int, ...]] = {"attn_norm.weight": (D,)}
    shapes.update(attention_shapes(config, "attn."))
    shapes.update({"ffn_norm.weight": (D,), "ffn.w_gate.weight": (d_ff, D)})
    shapes.update({"ffn.w_up.weight": (d_ff, D), "ffn.w_down.weight": (D, d_ff)})
    return {prefix + k: v for k, v in shapes.items()}


def attention_shapes(config: dict, prefix: str = "") -> dict[str, tuple[int, ...]]:
    D = config["d_model"]
    kv = config["num_kv_heads"] * (D // config["num_heads"])
    names = (("w_q", D), ("w_k", kv), ("w_v", kv), ("w_o", D))
    return {f"{prefix}{name}.weight": (rows, D) for name, rows in names}


def model_shapes(config: dict, V: int) -> dict[str, tuple[int, ...]]:
    """MiniLlama's parameter names and shapes, in creation order (lm_head untied)."""
    D = config["d_model"]
    shapes: dict[str, tuple[int, ...]] = {"token_embed.weight": (V, D)}
    for i in range(config["num_layers"]):
        shapes.update(block_shapes(config, f"blocks.{i}."))
    shapes.update({"final_norm.weight": (D,), "lm_head.weight": (V, D)})
    return shapes


def draw_state(gen, shapes: dict, *, train: bool = False) -> dict[str, torch.Tensor]:
    """Weights for `shapes`, drawn from gen. For the checks (train=False): embeddings of
    std 0.5 and norm weights 1 ± 0.3, so that a √D scale, a missing or swapped norm each
    change the output clearly. For training: nn.Linear's uniform ±1/√fan_in, embeddings of
    std 0.02 (as MiniGPT), norm weights 1."""
    state = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            state[name] = torch.ones(shape) if train else 1.0 + randn(gen, *shape, scale=0.3)
        elif name == "token_embed.weight":
            state[name] = randn(gen, *shape, scale=0.02 if train else 0.5)
        elif train:
            bound = 1.0 / math.sqrt(shape[1])
            state[name] = (
                (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1).mul(bound).float()
            )
        else:
            state[name] = randn(gen, *shape, scale=1.0 / math.sqrt(shape[1]))
    return state


def _positions(gen, T: int) -> torch.Tensor:
    """T distinct positions in [0, 40), in random order (not 0 .. T-1)."""
    return torch.randperm(40, generator=gen)[:T]


def _causal(T: int) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.bool).triu(1)


# --------------------------------------------------------------------------- inputs


def _layer_inputs(gen, shapes_of) -> dict:
    """A layer's config, weights (named by shapes_of(config)), input, positions and mask."""
    config = config_of(gen)
    B, T = _draw(gen, 2, 3), _draw(gen, 5, 8)
    return {
        "config": config,
        "state": draw_state(gen, shapes_of(config)),
        "x": randn(gen, B, T, config["d_model"]),
        "positions": _positions(gen, T),
        "mask": _causal(T),
    }


def inputs_attention(gen):
    return _layer_inputs(gen, attention_shapes)


def inputs_heads(gen):
    """As inputs_attention, with every position 0: rotary turns nothing there, so the run
    shows the heads, their groups, the scale and the mask alone."""
    x = _layer_inputs(gen, attention_shapes)
    x["positions"] = torch.zeros_like(x["positions"])
    return x


def inputs_block(gen):
    return _layer_inputs(gen, block_shapes)


def inputs_model(gen):
    config = config_of(gen)
    V = _draw(gen, 9, 14)
    B, T = _draw(gen, 2, 3), _draw(gen, 8, 12)
    return {
        "config": config,
        "vocab_size": V,
        "state": draw_state(gen, model_shapes(config, V)),
        "idx": torch.randint(V, (B, T), generator=gen),
    }


def inputs_head(gen):
    """A model whose vocabulary is larger than D (V = D + 8 .. 16), so that lm_head's weight
    (V, D) has a span the logits must lie in; final_norm's weight in [0.7, 1.3] (never near
    0: the judge divides by it)."""
    config = config_of(gen)
    D = config["d_model"]
    V = D + _draw(gen, 8, 16)
    B, T = _draw(gen, 2, 3), _draw(gen, 5, 8)
    state = draw_state(gen, model_shapes(config, V))
    weight = torch.rand(D, generator=gen, dtype=torch.float64) * 0.6 + 0.7
    state["final_norm.weight"] = weight.float()
    return {
        "config": config,
        "vocab_size": V,
        "state": state,
        "idx": torch.randint(V, (B, T), generator=gen),
    }


def inputs_causal(gen):
    """Two inputs equal up to position t; every token after t is changed."""
    x = inputs_model(gen)
    idx, V = x["idx"], x["vocab_size"]
    x["t"] = _draw(gen, 0, idx.size(1) - 2)
    other = (idx + torch.randint(1, V, idx.shape, generator=gen)) % V  # differs everywhere
    x["idx2"] = torch.where(torch.arange(idx.size(1)) > x["t"], other, idx)
    return x


def inputs_shapes(gen):
    """One model, two calls: a single token of a single sequence, and a batch longer than
    max_len (rotary angles are computed, so any T works)."""
    x = inputs_model(gen)
    V, n = x["vocab_size"], x["config"]["max_len"]
    x["idx"] = torch.randint(V, (1, 1), generator=gen)
    x["idx2"] = torch.randint(V, (_draw(gen, 2, 3), n + _draw(gen, 1, 4)), generator=gen)
    return x


def inputs_kv_heads(gen):
    """Multi-query (H_kv = 1) and multi-head (H_kv = H) models: their parameter shapes."""
    V = _draw(gen, 9, 14)
    configs = [config_of(gen, 1), config_of(gen, 4)]
    states = [draw_state(gen, model_shapes(c, V)) for c in configs]
    idx = torch.randint(V, (2, 5), generator=gen)
    return {"vocab_size": V, "configs": configs, "states": states, "idx": idx}


# --------------------------------------------------------------------------- probes


def _shapes_of(model, prefix: str = "") -> dict:
    """The names and shapes of the student's parameters, as int tensors, in order."""
    return {
        f"{prefix}param/{name}": torch.tensor(tuple(p.shape), dtype=torch.long)
        for name, p in model.named_parameters()
    }


def _loaded(model: nn.Module, state: dict):
    """(the model with `state` loaded, in eval mode, or None when its parameters do not fit
    the state's names and shapes; its parameter shapes)."""
    shapes = _shapes_of(model)
    if not fits(model, state):
        return None, shapes
    load_weights(model, state)
    return model.eval(), shapes


def _device(model: nn.Module, x: dict, key: str):
    return model.to(x[key].device)


def probe_attention(mod, x, grads=False):
    """RotaryAttention's (out, weights); with `grads`, also the gradients that reach x and
    the weights from the output (probing.gradients)."""
    c = x["config"]
    attn = mod.RotaryAttention(c["d_model"], c["num_heads"], c["num_kv_heads"], c["base"])
    model, shapes = _loaded(attn, x["state"])
    if model is None:
        return shapes
    model = _device(model, x, "x")
    run = lambda h: model(h, x["positions"], x["mask"])  # noqa: E731
    with torch.no_grad():
        out, weights = pair(run(x["x"]), "RotaryAttention's result")
    return {
        "out": out,
        "weights": weights,
        **(gradients(model, run, {"x": x["x"]}) if grads else {}),
    }


def probe_block(mod, x, grads=False):
    """LlamaBlock's output; with `grads`, also the gradients that reach x and the weights
    from it, and whether the block's own attention lets one through ("attn/grad/x")."""
    c = x["config"]
    block = mod.LlamaBlock(
        c["d_model"], c["num_heads"], c["num_kv_heads"], c["d_ff"], c["base"], c["eps"]
    )
    model, shapes = _loaded(block, x["state"])
    if model is None:
        return shapes
    model = _device(model, x, "x")
    run = lambda h: model(h, x["positions"], x["mask"])  # noqa: E731
    with torch.no_grad():
        got = {"out": run(x["x"])}
    if grads:
        got.update(gradients(model, run, {"x": x["x"]}))
        attn = getattr(model, "attn", None)
        got.update(_part_gradient(attn, x["x"], x["positions"], x["mask"], "attn"))
    return got


def _part_gradient(part, h, positions, mask, tag):
    """Whether the student's own sub-layer (a RotaryAttention, a LlamaBlock) lets a gradient
    through to its input: under "<tag>/grad/x". Nothing when it cannot be called so (its
    own checks say why). A whole layer's check asks the weights of such a sub-layer for a
    gradient only where it does: a cut in it is charged once, by its own check."""
    try:
        found = gradients(None, lambda h_: part(h_, positions, mask), {"x": h})
    except Exception:  # noqa: BLE001
        return {}
    return {f"{tag}/{key}": value for key, value in found.items()}


def attention_grads(mod, x):
    return probe_attention(mod, x, grads=True)


def block_grads(mod, x):
    return probe_block(mod, x, grads=True)


def _model(mod, x):
    return _loaded(mod.MiniLlama(x["vocab_size"], **x["config"]), x["state"])


def probe_logits(mod, x):
    model, shapes = _model(mod, x)
    if model is None:
        return shapes
    model = _device(model, x, "idx")
    return logits_of(model, x)


def logits_grads(mod, x):
    """probe_logits, the gradients that reach the weights from the logits, and whether the
    model's own first block, and its attention, let one through ("block/", "attn/")."""
    got = probe_logits(mod, x)
    model, _ = _model(mod, x)
    if model is None:
        return got
    model = _device(model, x, "idx")
    got.update(gradients(model, lambda: model(x["idx"])))
    T, device = x["idx"].size(-1), x["idx"].device
    positions = torch.arange(T, device=device)
    mask = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
    with torch.no_grad():
        h = model.token_embed(x["idx"]) if hasattr(model, "token_embed") else None
    blocks = getattr(model, "blocks", None)
    if isinstance(h, torch.Tensor) and isinstance(blocks, torch.nn.ModuleList) and len(blocks):
        got.update(_part_gradient(blocks[0], h, positions, mask, "block"))
        attn = getattr(blocks[0], "attn", None)
        got.update(_part_gradient(attn, h, positions, mask, "attn"))
    return got


def probe_shapes(mod, x):
    """Two calls of one model (and the first again, on a second model with the same weights:
    logits that change between them show nothing); a ValueError for T > max_len is recorded
    for the judge."""
    got = probe_logits(mod, {k: v for k, v in x.items() if k != "idx2"})
    model, _ = _model(mod, x)
    if model is None:
        return got
    with torch.no_grad():  # the same token again, through another model with the same weights
        got["again"] = _device(model, x, "idx")(x["idx"])
    try:
        with torch.no_grad():
            got["logits2"] = _device(model, x, "idx2")(x["idx2"])
    except ValueError as e:
        got["error"] = f"ValueError: {(str(e).splitlines() or [''])[0][:200]}"
    return got


def probe_kv_heads(mod, x):
    """The parameter shapes of a multi-query and a multi-head MiniLlama, and the logits of
    each on a short input with the grader's weights (only their shape is judged)."""
    got = {}
    for i, config in enumerate(x["configs"]):
        model, shapes = _loaded(mod.MiniLlama(x["vocab_size"], **config), x["states"][i])
        got.update({f"{i}/{k}": v for k, v in shapes.items()})
        if model is not None:
            with torch.no_grad():
                got[f"{i}/logits"] = _device(model, x, "idx")(x["idx"])
    return got


# --------------------------------------------------------------------------- train (slow)

# The training run: a one-block MiniLlama (D = 32, H = 4, H_kv = 2), AdamW, 200 steps of 32
# windows of 32 characters from the first 90 % of the corpus; the held-out loss is measured
# on the last 10 %, which training never sees. About 2 CPU-s (docs/llama.md).
TRAIN_CONFIG = {
    "d_model": 32,
    "num_heads": 4,
    "num_kv_heads": 2,
    "num_layers": 1,
    "d_ff": 64,
    "max_len": 32,
    "base": 10000.0,
    "eps": 1e-6,
}


class TrainArgs(TypedDict):
    steps: int
    batch_size: int
    seq_len: int
    lr: float


TRAIN_ARGS: TrainArgs = {"steps": 200, "batch_size": 32, "seq_len": 32, "lr": 1e-2}
HELD_OUT = 0.1  # the last tenth of the corpus


def split(data: torch.Tensor) -> int:
    """The first position of the held-out part of the corpus."""
    return int(len(data) * (1 - HELD_OUT))


def windows(data: torch.Tensor, starts: torch.Tensor, T: int):
    """(x, y): the windows of T tokens at `starts` and the same windows one token later."""
    offsets = torch.arange(T)
    return data[starts[:, None] + offsets], data[starts[:, None] + offsets + 1]


def inputs_train(gen):
    alphabet, data = corpus()
    T, first = TRAIN_ARGS["seq_len"], split(data)
    return {
        "state": draw_state(gen, model_shapes(TRAIN_CONFIG, len(alphabet)), train=True),
        "train_seed": int(torch.randint(0, 2**31 - 1, (1,), generator=gen)),
        "eval_starts": first + torch.randint(len(data) - first - T - 1, (64,), generator=gen),
    }


class NotTrainable(Exception):
    """The training run could not take a gradient step (what happened, in one line)."""


def _step(model, optimizer, x, y) -> float:
    logits = model(x)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
    optimizer.zero_grad()
    try:
        loss.backward()
    except RuntimeError as e:  # no graph: forward ran without gradients, or detached
        first = (str(e).splitlines() or [""])[0]
        raise NotTrainable(f"loss.backward() raised RuntimeError: {first}") from None
    optimizer.step()
    return loss.item()


def probe_train(mod, x):
    """Train the student's MiniLlama (the grader's initial weights, the grader's loop); send
    back its trained weights, its logits on four held-out windows (the judge measures the
    held-out loss itself, in the grading process, with its model of the computation these
    logits show) and its logits on every held-out window (the student copy, which has no
    model, measures the loss on these)."""
    alphabet, data = corpus()
    model, shapes = _loaded(mod.MiniLlama(len(alphabet), **TRAIN_CONFIG), x["state"])
    if model is None:
        return shapes
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=TRAIN_ARGS["lr"])
    gen = torch.Generator().manual_seed(x["train_seed"])
    T, B, last = (
        TRAIN_ARGS["seq_len"],
        TRAIN_ARGS["batch_size"],
        split(data) - TRAIN_ARGS["seq_len"],
    )
    # One thread: the model is tiny, and on a loaded machine torch's thread pool costs far
    # more than it gains (as in gpt's training check).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    got: dict = {"losses": []}
    try:
        for _ in range(TRAIN_ARGS["steps"]):
            xb, yb = windows(data, torch.randint(last - 1, (B,), generator=gen), T)
            got["losses"].append(_step(model, optimizer, xb, yb))
    except NotTrainable as e:
        return {"train_error": str(e)}
    finally:
        torch.set_num_threads(threads)
    got["losses"] = torch.tensor(got["losses"], dtype=torch.float64)
    with torch.no_grad():
        got["logits"] = model.eval()(windows(data, x["eval_starts"][:4].cpu(), T)[0])
        got["held_out/logits"] = model(windows(data, x["eval_starts"].cpu(), T)[0])
    got.update({f"state/{k}": v for k, v in weights_of(model, x["state"]).items()})
    return got
