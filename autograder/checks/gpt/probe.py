"""Probe side of gpt.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
MiniGPT runs on top of the modules gpt.py imports (in official grading, their trusted
stand-ins), with the grader's weights loaded and in eval mode; the weights are drawn without
any stand-in (the student copy has none of blocks.py, positional.py or gpt.py). generate
runs on ScriptedLM, a tiny language model whose logits are a fixed function of its
context, so a bug in MiniGPT never costs points in generate. train runs on ConvLM, a small
causal convolution language model (not a MiniGPT: a broken MiniGPT costs no training
points, and training it takes about half a CPU second); the probe sends the trained weights
back and the judge measures them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ...run.probing import corpus, gradients, load_weights, logits_of


def _draw(gen, low: int, high: int) -> int:
    """An int in [low, high], from the check's generator (every size depends on the seed)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


# --------------------------------------------------------------------------- MiniGPT inputs


def config_of(gen) -> dict:
    return {
        "vocab_size": _draw(gen, 9, 14),
        "d_model": 16,
        "num_heads": 2,
        "num_layers": _draw(gen, 2, 3),
        "d_ff": 32,
        "max_len": _draw(gen, 9, 12),
        "dropout": 0.1,  # graded in eval mode: dropout is off (principle 8)
    }


def _linears(**shapes) -> nn.Module:
    m = nn.Module()
    for name, (fan_in, fan_out, bias) in shapes.items():
        setattr(m, name, nn.Linear(fan_in, fan_out, bias=bias))
    return m


def _skeleton(config) -> nn.Module:
    """A module with MiniGPT's parameter names and shapes, to draw a state_dict from, built
    from nn built-ins in the order MiniGPT builds its own (so the draws are MiniGPT's): no
    stand-in of positional.py or blocks.py, no forward (the weights, not a model). The
    positional table is a buffer, not a weight: the grader draws none (load_weights)."""
    D, V, d_ff = config["d_model"], config["vocab_size"], config["d_ff"]
    m = nn.Module()
    m.token_embed = nn.Embedding(V, D)
    m.blocks = nn.ModuleList()
    for _ in range(config["num_layers"]):
        block = nn.Module()
        block.attn = _linears(**{f"w_{n}": (D, D, False) for n in "qkvo"})
        block.ffn = _linears(linear1=(D, d_ff, True), linear2=(d_ff, D, True))
        block.norm1, block.norm2 = nn.LayerNorm(D), nn.LayerNorm(D)
        m.blocks.append(block)
    m.final_norm = nn.LayerNorm(D)
    m.lm_head = nn.Linear(D, V, bias=False)
    m.lm_head.weight = m.token_embed.weight
    return m


def _state(gen, config) -> dict:
    """A state_dict for MiniGPT(**config), every parameter drawn from `gen`."""
    with torch.random.fork_rng():
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        m = _skeleton(config)
        params = dict(m.named_parameters())  # lm_head.weight is token_embed.weight (tied)
        # Embeddings of std 0.3: they make the √D scale and the positions both matter, so
        # each mistake changes the logits clearly; norm weights away from 1, the same.
        nn.init.normal_(params["token_embed.weight"], std=0.3)
        for name, p in params.items():
            if name.endswith("norm1.weight") or name.endswith("norm2.weight"):
                nn.init.normal_(p, mean=1.0, std=0.2)
        nn.init.normal_(params["final_norm.weight"], mean=1.0, std=0.3)
        nn.init.normal_(params["final_norm.bias"], std=0.3)
    return {k: v.clone() for k, v in m.state_dict().items()}


def inputs_model(gen):
    config = config_of(gen)
    # T < max_len: that T = max_len fits is the too-long check's (an off-by-one `T >=
    # max_len` costs that check alone)
    B, T = _draw(gen, 2, 3), _draw(gen, config["max_len"] - 3, config["max_len"] - 1)
    return {
        "config": config,
        "state": _state(gen, config),
        "idx": torch.randint(config["vocab_size"], (B, T), generator=gen),
    }


def inputs_scale(gen):
    x = inputs_model(gen)
    x["config"]["num_layers"] = 0
    x["state"] = {k: v for k, v in x["state"].items() if not k.startswith("blocks.")}
    return x


def inputs_causal(gen):
    """Two inputs equal up to position t; every token after t is changed."""
    x = inputs_model(gen)
    B, T = x["idx"].shape
    V = x["config"]["vocab_size"]
    x["t"] = t = _draw(gen, 0, T - 2)
    x["idx2"] = x["idx"].clone()
    shift = 1 + torch.randint(V - 1, (B, T - t - 1), generator=gen)
    x["idx2"][:, t + 1 :] = (x["idx"][:, t + 1 :] + shift) % V
    return x


def inputs_tying(gen):
    """The model's state, and a second (V, D) matrix for lm_head, unlike token_embed's."""
    x = inputs_model(gen)
    embed = x["state"]["token_embed.weight"]
    x["head"] = torch.randn(embed.shape, generator=gen, dtype=torch.float64).float() * 0.3
    return x


def load(mod, x, state=None):
    model = load_weights(mod.MiniGPT(**x["config"]), x["state"] if state is None else state)
    return model.to(x["idx"].device).eval()


def probe_logits(mod, x):
    return logits_of(load(mod, x), x)


def logits_grads(mod, x):
    """probe_logits, and the gradients that reach the weights from the logits."""
    model = load(mod, x)
    return {**logits_of(model, x), **gradients(model, lambda: model(x["idx"]))}


class _FirstBlock(BaseException):
    """Raised by the hook on MiniGPT's first block: what forward hands it is all the probe
    wants of the meta run (a BaseException: a forward's own `except Exception` lets it by)."""


def mask_device(model, idx) -> str:
    """Where MiniGPT's forward makes the mask it hands its blocks, told on the meta device
    (no values, no GPU needed): the model and idx are moved there and forward runs up to its
    first block, which a hook stops. "meta": every tensor handed to the block besides the
    activations is on idx's device; "cpu": one of them was made on the CPU whatever idx's
    device (on a GPU that forward fails); "" when it cannot be told (no blocks, nothing
    handed over, or a step before the first block that the meta device cannot run, such as a
    check of the token ids' values). The model is left on the meta device: use it no more."""
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, (nn.ModuleList, nn.Sequential)) or len(blocks) == 0:
        return ""
    handed: list[torch.Tensor] = []

    def hook(module, args, kwargs):
        handed.extend(t for t in (*args[1:], *kwargs.values()) if isinstance(t, torch.Tensor))
        raise _FirstBlock

    handle = blocks[0].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            model.to("meta")(idx.to("meta"))
        return ""  # the first block never ran
    except _FirstBlock:
        pass
    except Exception:  # what the meta device cannot run: not the student's mistake
        return ""
    finally:
        handle.remove()
    # (a 0-d tensor on the CPU is a number: PyTorch lets it meet tensors of any device)
    devices = {t.device.type for t in handed if t.dim() > 0}
    return "cpu" if "cpu" in devices else "meta" if "meta" in devices else ""


def probe_causal(mod, x):
    """The logits of two inputs equal up to t, and where forward makes its mask
    (mask_device: on a CPU grading only, where the first runs cannot show it)."""
    model = load(mod, x)
    got = logits_of(model, x)
    if x["idx"].device.type == "cpu":
        got["mask_device"] = mask_device(model, x["idx"])
    return got


def probe_tying(mod, x):
    """The logits after loading token_embed.weight = E and lm_head.weight = W (different):
    a tied model holds one of them in both places, an untied one uses both. Plus the
    parameter names and count."""
    model = mod.MiniGPT(**x["config"])
    params = list(model.named_parameters())
    state = {**x["state"], "lm_head.weight": x["head"].clone()}
    load_weights(model, state).to(x["idx"].device).eval()
    with torch.no_grad():
        logits = model(x["idx"])
    return {
        "logits": logits,
        "names": "|".join(name for name, _ in params),
        "n_params": sum(p.numel() for _, p in params),
    }


def probe_attn(mod, x):
    model = load(mod, x)
    with torch.no_grad():
        result = model(x["idx"], return_attn=True)
        plain = model(x["idx"])
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return {"problem": f"it returned a {type(result).__name__}"}
    logits, weights = result
    if not isinstance(weights, (list, tuple)):
        return {"problem": f"the second item is a {type(weights).__name__}"}
    got = {"logits": logits, "plain": plain, "layers": len(weights)}
    got.update({f"weights{i}": w for i, w in enumerate(weights)})
    return got


def probe_too_long(mod, x):
    model = load(mod, x)
    n = x["config"]["max_len"]
    got = {}
    for T in (n, n + 1):
        idx = torch.zeros(1, T, dtype=torch.int64, device=x["idx"].device)
        try:
            with torch.no_grad():
                model(idx)
            got[f"T{T}"] = "ok"
        except NotImplementedError:
            raise
        except ValueError:
            got[f"T{T}"] = "ValueError"
        except Exception as e:  # the wrong exception is a finding, not a crash
            got[f"T{T}"] = type(e).__name__
    return got


# --------------------------------------------------------------------------- generate


class ContextTooLong(ValueError):
    """Raised by the scripted model: generate fed it more than max_len tokens."""


class ScriptedLM(nn.Module):
    """logits[:, t] = table[idx[:, t]] + first[idx[:, 0]] + pos[t], shape (B, T, V).

    A fixed function of its context, not a model of anything the student writes. It depends
    on the first token of the context, so a context cropped the wrong way gives other
    logits; it records every call's context, mode and gradient tracking.
    """

    def __init__(self, table, first, pos):
        super().__init__()
        self.table, self.first, self.pos = (nn.Parameter(t.clone()) for t in (table, first, pos))
        self.max_len = pos.size(0)
        self.calls = []

    def forward(self, idx):
        T = idx.size(1)
        self.calls.append((idx.detach().clone(), self.training, torch.is_grad_enabled()))
        if T > self.max_len:
            raise ContextTooLong(T)
        return self.table[idx] + self.first[idx[:, :1]] + self.pos[:T]


def scripted(x) -> ScriptedLM:
    return ScriptedLM(x["table"].cpu(), x["first"].cpu(), x["pos"].cpu())


def inputs_generate(gen):
    V, max_len = _draw(gen, 11, 15), _draw(gen, 5, 7)
    B, T0 = _draw(gen, 6, 8), _draw(gen, 2, 3)  # rows: draws that tell the mistakes apart
    return {
        "table": torch.randn(V, V, generator=gen) * 1.5,
        "first": torch.randn(V, V, generator=gen),
        "pos": torch.randn(max_len, V, generator=gen) * 0.5,
        "prompt": torch.randint(V, (B, T0), generator=gen),
        "seed": int(torch.randint(0, 2**31 - 1, (1,), generator=gen)),
        "crop_n": max_len - T0 + _draw(gen, 3, 5),  # runs past max_len
        "top_k": _draw(gen, 2, 4),
    }


def cases(check: str, x) -> list[tuple[str, int, float, int | None]]:
    """The runs each generate check makes: (name, max_new_tokens, temperature, top_k). Only
    the crop case grows the sequence past max_len (T0 + 3 <= 6 <= max_len otherwise)."""
    V = x["table"].size(0)
    return {
        "greedy": [("greedy", 3, 0.0, None)],
        "crop": [("crop", x["crop_n"], 1.0, None)],
        "sample": [("sample", 3, 1.0, None)],
        "temperature": [("t05", 3, 0.5, None), ("t20", 3, 2.0, None)],
        "top-k": [("k", 3, 2.0, x["top_k"]), ("k1", 3, 0.7, 1), ("kbig", 3, 0.5, V + 5)],
    }[check]


# Runs a check makes only to read the student's own conventions, never judged themselves:
# the top-k check's temperatures without top_k (the temperature check judges those runs), so
# that a temperature mistake made with and without top_k is charged once, by the temperature
# check, and one made only with top_k by the top-k check. {judged run: its run without top_k}
WITHOUT_TOP_K = {"k": "k-no-top-k", "kbig": "kbig-no-top-k"}


def own_runs(check: str, x) -> list[tuple[str, int, float, int | None]]:
    """The runs `check` makes besides cases(check, x): each judged run's twin without top_k."""
    return [
        (WITHOUT_TOP_K[name], n, temperature, None)
        for name, n, temperature, _ in cases(check, x)
        if name in WITHOUT_TOP_K
    ]


def _run_cases(mod, x, check):
    # Generation runs on the CPU whatever --device is: the scripted model is tiny, and a
    # CPU generator keeps the samples equal to the stored reference's.
    got = {}
    own = own_runs(check, x)
    for name, n, temperature, top_k in cases(check, x) + own:
        model = scripted(x)
        gen = torch.Generator().manual_seed(x["seed"])
        before = gen.get_state()
        try:
            # torch's global generator seeded alike (and restored after): a generate that
            # ignores `generator` draws the same stream from it, so only the sample check,
            # which reads the generator's state, charges that
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(x["seed"])
                out = mod.generate(
                    model, x["prompt"].cpu(), n, temperature=temperature, top_k=top_k, generator=gen
                )
        except ContextTooLong as e:
            got[f"{name}/too_long"] = int(e.args[0])
            continue
        except NotImplementedError:
            raise
        except (RuntimeError, ZeroDivisionError, IndexError) as e:
            # Where a known mistake raises (k not clamped to V; temperature 0 divided), the
            # error is recorded for the judge to name; elsewhere it is the student's crash
            # (in a run made only to read conventions, the error is kept: the check it
            # belongs to charges it).
            own_run = (name, n, temperature, top_k) in own
            if not own_run and temperature != 0 and (top_k is None or top_k <= x["table"].size(0)):
                raise
            got[f"{name}/error"] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"
            continue
        got[f"{name}/ids"] = out
        got[f"{name}/generator-unused"] = torch.equal(gen.get_state(), before)
        # What each call fed the model: the crop check judges it; the others judge the
        # tokens given it (a context mistake is the crop check's to charge).
        got[f"{name}/calls"] = len(model.calls)
        got.update({f"{name}/context{i}": c for i, (c, _, _) in enumerate(model.calls)})
    return got


def probe_greedy(mod, x):
    return _run_cases(mod, x, "greedy")


def probe_crop(mod, x):
    return _run_cases(mod, x, "crop")


def probe_sample(mod, x):
    return _run_cases(mod, x, "sample")


def probe_temperature(mod, x):
    return _run_cases(mod, x, "temperature")


def probe_top_k(mod, x):
    return _run_cases(mod, x, "top-k")


def probe_modes(mod, x):
    got = {}
    for start in ("train", "eval"):
        model = scripted(x)
        model.train(start == "train")
        gen = torch.Generator().manual_seed(x["seed"])
        out = mod.generate(model, x["prompt"].cpu(), 2, temperature=1.0, generator=gen)
        calls = model.calls
        got[f"{start}/grad"] = any(grad for _, _, grad in calls)
        got[f"{start}/training"] = any(training for _, training, _ in calls)
        got[f"{start}/after"] = "train" if model.training else "eval"
        got[f"{start}/requires_grad"] = bool(getattr(out, "requires_grad", False))
    return got


# --------------------------------------------------------------------------- train (slow)


class ConvLM(nn.Module):
    """The training check's language model: token embeddings, one causal convolution over
    the last `width` tokens, GELU, a linear head. (B, T) int64 -> (B, T, V) logits.

    Not a MiniGPT (train's docstring asks only for a model mapping (B, T) token ids to
    (B, T, V) logits, with .max_len): a MiniGPT bug costs nothing here, and 200 steps cost
    about half a CPU second. Position t sees tokens t - width + 1 .. t, so a run with
    unshifted targets learns to copy its input.
    """

    def __init__(self, vocab_size, d=32, hidden=64, width=4, max_len=64):
        super().__init__()
        self.max_len, self.width = max_len, width
        self.token_embed = nn.Embedding(vocab_size, d)
        self.conv = nn.Conv1d(d, hidden, width)
        self.lm_head = nn.Linear(hidden, vocab_size)

    def forward(self, idx):
        x = F.pad(self.token_embed(idx).transpose(1, 2), (self.width - 1, 0))  # (B, d, w-1+T)
        return self.lm_head(F.gelu(self.conv(x)).transpose(1, 2))  # (B, T, V)


TRAIN_ARGS = {"steps": 200, "batch_size": 16, "seq_len": 32, "lr": 1e-2}
HELD_OUT = 0.1  # the last tenth of the corpus: train never sees it


def split(data: torch.Tensor) -> int:
    """The first position of the held-out part of the corpus."""
    return int(len(data) * (1 - HELD_OUT))


def train_model(alphabet: str, model_seed: int) -> ConvLM:
    with torch.random.fork_rng():
        torch.manual_seed(model_seed)
        return ConvLM(len(alphabet))


def inputs_train(gen):
    """The seeds of the model and of train's batches, and 64 window starts in the held-out
    tail of the corpus (the grader's choice; train is given only the rest)."""
    _, data = corpus()
    T, first = TRAIN_ARGS["seq_len"], split(data)
    return {
        "model_seed": int(torch.randint(0, 2**31 - 1, (1,), generator=gen)),
        "train_seed": int(torch.randint(0, 2**31 - 1, (1,), generator=gen)),
        "eval_starts": first + torch.randint(len(data) - first - T - 1, (64,), generator=gen),
    }


TINY_LR = 1e-12  # no AdamW step at this learning rate moves a float32 weight of ~0.1 at all


def moved_at_tiny_lr(model: torch.nn.Module, train: Callable[[float], Any]) -> float | None:
    """How far `train(TINY_LR)` (a student's training function, run for a step or two on
    `model` at that learning rate) moves `model`'s weights: the largest change of any entry,
    about 0 when it trains at the lr it is given, about the optimiser's default lr (1e-3)
    when it ignores it. None when the run raises: the main run's check judges the function."""
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    try:
        train(TINY_LR)
    except Exception:  # noqa: BLE001  (student code; the check's main run charges it)
        return None
    after = model.state_dict()
    moved = [
        float((after[k].detach() - v).abs().max())
        for k, v in before.items()
        if v.is_floating_point() and v.numel() and k in after and after[k].shape == v.shape
    ]
    return max(moved, default=0.0)


def not_floats(values: Any) -> str:
    """The type of the first entry of `values` that is not a Python number (a tensor, from
    `losses.append(loss)` without .item()); "" when every entry is one."""
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (float, int)):
            return type(value).__name__
    return ""


def probe_train(mod, x):
    """Run the student's train on a fresh ConvLM and the first 90 % of the corpus; send back
    its losses and trained weights (the judge runs the trained ConvLM, the grader's own code,
    on held-out windows of the last 10 %, in the grading process), and how far two steps at
    a learning rate too small to move a weight move one (does train use its lr?)."""
    alphabet, data = corpus()
    model = train_model(alphabet, x["model_seed"])
    tiny = train_model(alphabet, x["model_seed"])
    text = data[: split(data)]

    def tiny_run(lr: float) -> None:
        gen = torch.Generator().manual_seed(x["train_seed"])
        mod.train(tiny, text, steps=2, batch_size=2, seq_len=8, lr=lr, generator=gen)

    gen = torch.Generator().manual_seed(x["train_seed"])
    # One thread: the model is tiny, and on a loaded machine torch's thread pool costs far
    # more than it gains (measured: 0.6 CPU-s on one thread, 14 CPU-s on two, load 25).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        losses = mod.train(model, text, generator=gen, **TRAIN_ARGS)
        moved = moved_at_tiny_lr(tiny, tiny_run)
    finally:
        torch.set_num_threads(threads)
    got = {}
    try:
        got["losses"] = torch.tensor([float(v) for v in losses], dtype=torch.float64)
        got["losses_item_type"] = not_floats(losses)
    except (TypeError, ValueError):
        got["losses_type"] = type(losses).__name__
    got.update({f"state/{k}": v for k, v in model.state_dict().items()})
    if moved is not None:
        got["tiny_lr_moved"] = moved
    return got
