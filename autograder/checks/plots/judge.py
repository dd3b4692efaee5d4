"""Judge side of plots.py's checks: misconceptions, models of wrong pictures, verdicts.

What each figure shows is compared with the weights it was given (no stored reference is
needed), and every promise of the docstrings is checked: the 0-1 colour scale and the colour
bar, the heads' grid read row by row with the spare Axes switched off, the log-2 x axis and
the legends of the √d_k curves.
"""

from __future__ import annotations

import math

import torch

from ...core import CheckList, Failure, misconception
from ...verdicts import assert_close, tensor
from . import probe

CHECKS = CheckList("plots")
# Paid in the worker before any student code, outside every check's CPU seconds
# (limits.warm_ups_of): every check draws a figure (matplotlib's import, fonts).
WARM_UP = ("matplotlib",)

# --------------------------------------------------------------------------- misconceptions

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
    "x data results['d_k'], and a legend (ax.legend()).",
)
COLOUR_SCALE = misconception(
    "plot-colour-scale",
    "{what}: heatmap {i} spans the colours from {vmin:.3g} to {vmax:.3g}; the docstring "
    "promises a 0 to 1 colour scale, the same for every map.",
    "imshow(..., vmin=0, vmax=1): without them matplotlib stretches each map's own minimum "
    "and maximum over the colours, so two maps cannot be compared by eye.",
)
NO_COLORBAR = misconception(
    "plot-no-colorbar",
    "{what}: the heatmap has no colour bar (the docstring promises one).",
    "image = ax.imshow(...); fig.colorbar(image, ax=ax).",
)
SPARE_AXES_ON = misconception(
    "plot-spare-axes-on",
    "{what}: {count} Axes left over in the grid hold no head but are still drawn (empty "
    "frames with ticks); the docstring asks to switch them off.",
    'For every Axes after the last head: ax.axis("off").',
)
HEADS_COLUMN_MAJOR = misconception(
    "plot-heads-column-major",
    "{what} fills the grid column by column (head 1 under head 0); heads go row by row, head "
    "0 at the top left, head 1 to its right.",
    "axes = fig.subplots(rows, cols, squeeze=False).flatten() is in row order: draw head h "
    "on axes[h] (not axes[h % rows, h // rows]).",
)
LAYER_MEAN = misconception(
    "plot-layer-mean",
    "{what} shows {shown}, not sequence 0's weights averaged over the heads, "
    "attn[n][0].mean(dim=0).",
    "attn[n] is (B, H, T, T): take sequence 0 first (attn[n][0], (H, T, T)), then the mean "
    "over the heads (dim=0).",
)
LOG2_AXIS = misconception(
    "plot-log2-axis",
    "plot_sqrt_dk: the x axis of Axes {i} is {scale}; the docstring promises a log-2 d_k axis.",
    'ax.set_xscale("log", base=2): d_k doubles from point to point, so the points are evenly '
    "spaced on it.",
)

# --------------------------------------------------------------------------- verdicts


def _start(got, what):
    if "not_a_figure" in got:
        raise Failure(NOT_A_FIGURE, what=what, got=got["not_a_figure"])


def _count(got, what, expected, detail):
    if got.get("panels") != expected:
        raise Failure(PANELS, what=what, got=got.get("panels"), expected=expected, detail=detail)


def _labels(got, what, i, rows, cols):
    for axis, key, tokens in (("x", "x", cols), ("y", "y", rows)):
        if got.get(f"{key}{i}") != "|".join(tokens):
            raise Failure(LABELS, what=what, axis=axis, got=got.get(f"{key}{i}"), expected=tokens)


def _image(got, what, i, expected, candidates=()):
    value = tensor(got, f"image{i}", f"{what}'s heatmap {i}")
    if value.shape == expected.T.shape and value.shape != expected.shape:
        raise Failure(TRANSPOSED, what=what)
    tensor(got, f"image{i}", f"{what}'s heatmap {i}", shape=expected.shape)
    assert_close(
        value,
        expected.float(),
        f"{what}'s heatmap {i}",
        [(TRANSPOSED, expected.T.float(), {}), *candidates],
    )


def _colour_scale(got, what, i):
    vmin, vmax = tensor(got, f"clim{i}", f"{what}'s colour limits").tolist()
    if not (vmin == 0 and vmax == 1):
        raise Failure(COLOUR_SCALE, what=what, i=i, vmin=vmin, vmax=vmax)


@CHECKS.check(
    "attention",
    "plot_attention draws the (L, S) weights with query and key labels",
    1,
    inputs=probe.inputs_attention,
    probe=probe.probe_attention,
    exercise="plot_attention",
)
def verdict_attention(got, want, x):
    what = "plot_attention"
    _start(got, what)
    _count(got, what, 1, "one map")
    _image(got, what, 0, x["weights"])
    _labels(got, what, 0, x["queries"], x["keys"])


@CHECKS.check(
    "attention-colour",
    "plot_attention uses the 0-1 colour scale, with a colour bar",
    1,
    inputs=probe.inputs_attention,
    probe=probe.probe_attention,
    exercise="plot_attention",
)
def verdict_attention_colour(got, want, x):
    what = "plot_attention"
    _start(got, what)
    _count(got, what, 1, "one map")
    _colour_scale(got, what, 0)
    if not got.get("colorbar0"):
        raise Failure(NO_COLORBAR, what=what)


def _layer_candidates(w):
    """What a wrong reduction of one layer's (B, H, T, T) weights draws."""

    def named(shown, value):
        return (LAYER_MEAN, value, {"shown": shown})

    return [
        named("the sum over the heads", lambda: w[0].sum(dim=0).float()),
        named("the mean over the batch and the heads", lambda: w.mean(dim=(0, 1)).float()),
        named("head 0 of sequence 0 only", lambda: w[0, 0].float()),
        named("head 0 averaged over the batch", lambda: w.mean(dim=0)[0].float()),
    ]


@CHECKS.check(
    "layer-means",
    "plot_layer_means draws one head-averaged map per layer, on the 0-1 colour scale",
    1,
    inputs=probe.inputs_layers,
    probe=probe.probe_layers,
    exercise="plot_layer_means",
)
def verdict_layers(got, want, x):
    what = "plot_layer_means"
    _start(got, what)
    attn = x["attn"]
    _count(got, what, len(attn), "one per layer, sequence 0, mean over heads")
    for i, w in enumerate(attn):
        _image(got, what, i, w[0].mean(dim=0), _layer_candidates(w))
        _labels(got, what, i, x["tokens"], x["tokens"])
    for i in range(len(attn)):
        _colour_scale(got, what, i)


@CHECKS.check(
    "heads",
    "plot_heads draws every head in a grid, row by row, spare Axes switched off",
    1,
    inputs=probe.inputs_heads,
    probe=probe.probe_heads,
    exercise="plot_heads",
)
def verdict_heads(got, want, x):
    """Heads are matched to their grid cells (row, column), read row by row; heatmap Axes
    that are not grid cells are taken in fig.axes order."""
    what = "plot_heads"
    _start(got, what)
    weights, tokens = x["weights"], x["tokens"]
    H = weights.size(0)
    cols = min(x["cols"], H)
    rows = math.ceil(H / cols)
    _count(got, what, H, "one per head, unused grid cells switched off")
    cells = []
    for i in range(H):
        row, col = got.get(f"row{i}"), got.get(f"col{i}")
        if type(row) is not int or type(col) is not int or row < 0 or col < 0:
            row, col = i // cols, i % cols  # not a grid cell: fig.axes order
        cells.append((row, col))
    row_major = [r * cols + c for r, c in cells]
    column_major = [c * rows + r for r, c in cells]

    def shows(order):
        return all(
            0 <= h < H
            and tensor(got, f"image{i}", f"{what}'s heatmap {i}").shape == weights[h].shape
            and torch.allclose(got[f"image{i}"], weights[h].float(), atol=1e-6)
            for i, h in enumerate(order)
        )

    if not shows(row_major) and shows(column_major):
        raise Failure(HEADS_COLUMN_MAJOR, what=what)
    for i, h in enumerate(row_major):
        if not 0 <= h < H:
            detail = f"heatmap {i} sits in grid cell {cells[i]}, where no head goes row by row"
            raise Failure(PANELS, what=what, got=H, expected=H, detail=detail)
        _image(got, what, i, weights[h])
        _labels(got, what, i, tokens, tokens)
    if got.get("spare_on"):
        raise Failure(SPARE_AXES_ON, what=what, count=got["spare_on"])


@CHECKS.check(
    "sqrt-dk",
    "plot_sqrt_dk draws the four curves on a log-2 d_k axis, with legends",
    1,
    inputs=probe.inputs_sqrt_dk,
    probe=probe.probe_sqrt_dk,
    exercise="plot_sqrt_dk",
)
def verdict_sqrt_dk(got, want, x):
    _start(got, "plot_sqrt_dk")
    if got.get("axes") != 2:
        raise Failure(CURVES, detail=f"expected 2 Axes, got {got.get('axes')}")
    r = x["results"]
    n = r["d_k"].numel()
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
                tensor(got, f"x{i}_{j}", "the x data", shape=(n,)), r["d_k"].float(), "the x data"
            )
            assert_close(
                tensor(got, f"y{i}_{j}", f"the {name} {tag} line", shape=(n,)),
                r[f"{name}_{tag}"],
                f"the {name} {tag} line",
            )
        scale, base = got.get(f"xscale{i}"), got.get(f"xbase{i}")
        if scale != "log" or base != 2:
            shown = "linear" if scale == "linear" else f"{scale} (base {base})"
            raise Failure(LOG2_AXIS, i=i, scale=shown)
        if not got.get(f"legend{i}"):
            raise Failure(CURVES, detail=f"Axes {i} has no legend")
