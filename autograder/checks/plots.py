"""Checks for plots.py: each figure is read back (image arrays, tick labels, line data) and
compared with the weights it was given. Figures are closed by dropping them (no pyplot)."""

from __future__ import annotations

import torch

from ..core import Check, Failure, misconception
from ..verdicts import assert_close, tensor

MODULE = "plots"
ORDER = 75

NOT_A_FIGURE = misconception(
    "plot-not-a-figure",
    "{what} returned {got}; it must return the matplotlib Figure it drew on.",
    "Build it with Figure(...) (from matplotlib.figure) and `return fig` at the end.",
)
TRANSPOSED = misconception(
    "plot-transposed",
    "{what} draws the weights transposed: rows must be the queries, columns the keys.",
    "imshow(weights) as it is: row i of the image is query i. Do not pass weights.T.",
)
LABELS = misconception(
    "plot-tick-labels",
    "{what}: the {axis} tick labels are {got}, expected the tokens {expected}.",
    "ax.set_xticks(range(S), key_tokens) and ax.set_yticks(range(L), query_tokens).",
)
PANELS = misconception(
    "plot-panels",
    "{what} drew {got} heatmaps, expected {expected} ({detail}).",
    "One Axes per layer (or head), each with one imshow; switch unused Axes off.",
)
CURVES = misconception(
    "plot-sqrt-dk-lines",
    "plot_sqrt_dk: {detail}.",
    "Two Axes (entropy, largest weight), each with the lines 'scaled' then 'unscaled', "
    "x data results['d_k'].",
)


def _figure(fig, what):
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise Failure(NOT_A_FIGURE, what=what, got=f"a {type(fig).__name__}")
    return fig


def _images(fig):
    """(image arrays, x tick labels, y tick labels) of the Axes that hold an image."""
    arrays, xs, ys = [], [], []
    for ax in fig.axes:
        if ax.images:
            arrays.append(torch.as_tensor(ax.images[0].get_array().filled(float("nan"))))
            xs.append("|".join(t.get_text() for t in ax.get_xticklabels()))
            ys.append("|".join(t.get_text() for t in ax.get_yticklabels()))
    return arrays, xs, ys


def _probe_images(fig, what):
    arrays, xs, ys = _images(_figure(fig, what))
    got = {"panels": len(arrays)}
    for i, (a, x, y) in enumerate(zip(arrays, xs, ys, strict=True)):
        got[f"image{i}"], got[f"x{i}"], got[f"y{i}"] = a.float(), x, y
    return got


def _weights(gen, *shape):
    return torch.softmax(torch.randn(*shape, generator=gen) * 2, dim=-1)


TOKENS = ["T", "h", "e", " ", "k", "e", "e", "p"]


def inputs_attention(gen):
    return {"weights": _weights(gen, 5, 7), "queries": TOKENS[:5], "keys": list("abcdefg")}


def inputs_layers(gen):
    return {"attn": [_weights(gen, 2, 3, 6, 6) for _ in range(3)], "tokens": TOKENS[:6]}


def inputs_heads(gen):
    return {"weights": _weights(gen, 6, 5, 5), "tokens": TOKENS[:5]}


def inputs_sqrt_dk(gen):
    d_k = torch.tensor([2, 4, 8, 16])
    names = ("entropy_scaled", "entropy_unscaled", "max_weight_scaled", "max_weight_unscaled")
    return {"results": {"d_k": d_k, **{n: torch.rand(4, generator=gen) for n in names}}}


def probe_attention(mod, x):
    fig = mod.plot_attention(x["weights"], x["queries"], x["keys"])
    return _probe_images(fig, "plot_attention")


def probe_layers(mod, x):
    return _probe_images(mod.plot_layer_means(x["attn"], x["tokens"]), "plot_layer_means")


def probe_heads(mod, x):
    return _probe_images(mod.plot_heads(x["weights"], x["tokens"], cols=4), "plot_heads")


def probe_sqrt_dk(mod, x):
    fig = _figure(mod.plot_sqrt_dk(x["results"]), "plot_sqrt_dk")
    got = {"axes": len(fig.axes)}
    for i, ax in enumerate(fig.axes):
        got[f"lines{i}"] = len(ax.get_lines())
        for j, line in enumerate(ax.get_lines()):
            got[f"x{i}_{j}"] = torch.as_tensor(line.get_xdata(), dtype=torch.float32)
            got[f"y{i}_{j}"] = torch.as_tensor(line.get_ydata(), dtype=torch.float32)
            got[f"label{i}_{j}"] = str(line.get_label())
    return got


def _verdict_images(what, expected_images, rows, cols, detail):
    def verdict(got, want, x):
        images = expected_images(x)
        if got.get("panels") != len(images):
            raise Failure(
                PANELS, what=what, got=got.get("panels"), expected=len(images), detail=detail
            )
        for i, image in enumerate(images):
            value = tensor(got, f"image{i}", f"{what}'s heatmap {i}")
            if value.shape == image.T.shape and value.shape != image.shape:
                raise Failure(TRANSPOSED, what=what)
            tensor(got, f"image{i}", f"{what}'s heatmap {i}", shape=image.shape)
            assert_close(
                value, image.float(), f"{what}'s heatmap {i}", [(TRANSPOSED, image.T.float(), {})]
            )
            for axis, key, tokens in (("x", "x", cols(x)), ("y", "y", rows(x))):
                if got.get(f"{key}{i}") != "|".join(tokens):
                    raise Failure(
                        LABELS, what=what, axis=axis, got=got.get(f"{key}{i}"), expected=tokens
                    )

    return verdict


def verdict_sqrt_dk(got, want, x):
    if got.get("axes") != 2:
        raise Failure(CURVES, detail=f"expected 2 Axes, got {got.get('axes')}")
    r = x["results"]
    for i, name in enumerate(("entropy", "max_weight")):
        if got.get(f"lines{i}") != 2:
            raise Failure(CURVES, detail=f"Axes {i} has {got.get(f'lines{i}')} lines, expected 2")
        for j, tag in enumerate(("scaled", "unscaled")):
            if got.get(f"label{i}_{j}") != tag:
                raise Failure(
                    CURVES,
                    detail=f"line {j} of Axes {i} is labelled "
                    f"{got.get(f'label{i}_{j}')!r}, expected {tag!r}",
                )
            assert_close(
                tensor(got, f"x{i}_{j}", "the x data", shape=(4,)), r["d_k"].float(), "the x data"
            )
            assert_close(
                tensor(got, f"y{i}_{j}", f"the {name} {tag} line", shape=(4,)),
                r[f"{name}_{tag}"],
                f"the {name} {tag} line",
            )


CHECKS = [
    Check(
        MODULE,
        "attention",
        "plot_attention draws the (L, S) weights with query and key labels",
        2,
        inputs_attention,
        probe_attention,
        _verdict_images(
            "plot_attention",
            lambda x: [x["weights"]],
            lambda x: x["queries"],
            lambda x: x["keys"],
            "one map",
        ),
        "plot_attention",
    ),
    Check(
        MODULE,
        "layer-means",
        "plot_layer_means draws one head-averaged map per layer",
        1,
        inputs_layers,
        probe_layers,
        _verdict_images(
            "plot_layer_means",
            lambda x: [w[0].mean(dim=0) for w in x["attn"]],
            lambda x: x["tokens"],
            lambda x: x["tokens"],
            "one per layer, sequence 0, mean over heads",
        ),
        "plot_layer_means",
    ),
    Check(
        MODULE,
        "heads",
        "plot_heads draws every head of a layer in a grid (H = 6, 4 per row)",
        1,
        inputs_heads,
        probe_heads,
        _verdict_images(
            "plot_heads",
            lambda x: list(x["weights"]),
            lambda x: x["tokens"],
            lambda x: x["tokens"],
            "one per head, unused grid cells switched off",
        ),
        "plot_heads",
    ),
    Check(
        MODULE,
        "sqrt-dk",
        "plot_sqrt_dk draws the four curves of the √d_k experiment",
        1,
        inputs_sqrt_dk,
        probe_sqrt_dk,
        verdict_sqrt_dk,
        "plot_sqrt_dk",
    ),
]
