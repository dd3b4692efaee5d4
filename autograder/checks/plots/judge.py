"""Judge side of plots.py's checks: misconceptions, models of wrong pictures, verdicts.

What each figure shows is compared with the weights it was given (no stored reference is
needed), and every promise of the docstrings is checked: the 0-1 colour scale and the colour
bar, the heads' grid read row by row with the spare Axes switched off, the log-2 x axis and
the legends of the √d_k curves.
"""

from __future__ import annotations

import math

import torch

from ...core import CheckList, Failure, Misconceptions, no_reference
from ...verdicts import assert_close, tensor
from . import probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("plots")
# Paid in the worker before any student code, outside every check's CPU seconds
# (limits.warm_ups_of): every check draws a figure (matplotlib's import, fonts).
WARM_UP = ("matplotlib",)

# --------------------------------------------------------------------------- misconceptions

NOT_A_FIGURE = misconception(
    "plot-not-a-figure",
    "{what} returned {got}; it must return the matplotlib Figure it drew on.",
    (
        "A plotting function that returns its Figure lets the caller save it, show it in a "
        "notebook or test it; one that returns nothing, or draws on pyplot's global state, leaves "
        "the caller nothing to work with.",
        "Create a matplotlib.figure.Figure yourself (not plt.figure, no plt.show), draw on its "
        "Axes, and return the Figure object at the end.",
        "{what} returned {got}: end with `return fig`, the Figure you built with Figure(...) from "
        "matplotlib.figure; not an Axes, an image or None.",
    ),
)
TRANSPOSED = misconception(
    "plot-transposed",
    "{what} draws the weights transposed: rows must be the queries, columns the keys.",
    (
        "An attention map is read row by row: row i is query i, and its colours show how query i "
        "spreads its attention over the keys. Transposed, each row shows one key instead, and the "
        "reader draws the wrong conclusions.",
        "Give imshow the (L, S) weights as they are: imshow puts the first axis on the rows and "
        "the second on the columns.",
        "imshow(weights) as it is, with no .T or transpose: row i of the image is query i and "
        "column j is key j.",
    ),
)
LABELS = misconception(
    "plot-tick-labels",
    "{what}: the {axis} tick labels are {got}, expected the tokens {expected}.",
    (
        "Tick labels turn a grid of colours into a statement about tokens: the columns are the "
        "keys and the rows are the queries, so each axis needs its own tokens, in order.",
        "Set the positions and the labels of the ticks together, one tick per row or column: "
        "Axes.set_xticks for the key tokens and Axes.set_yticks for the query tokens.",
        "The {axis} ticks should read {expected}: set_xticks(range(S), key_tokens) and "
        "set_yticks(range(L), query_tokens) on each Axes.",
    ),
)
PANELS = misconception(
    "plot-panels",
    "{what} drew {got} heatmaps, expected {expected} ({detail}).",
    (
        "Each heatmap stands for one thing, one layer or one head: the reader counts on one panel "
        "per item, and on nothing else in the figure that looks like a heatmap.",
        "Make one Axes per layer (or head) with Figure.subplots, call imshow exactly once on "
        "each, and switch the unused Axes off.",
        "Expected {expected} heatmaps, got {got}: one imshow per Axes, for each layer or head in "
        "turn; a spare Axes gets only .axis('off') and no image.",
    ),
)
CURVES = misconception(
    "plot-sqrt-dk-lines",
    "plot_sqrt_dk: {detail}.",
    (
        "The √d_k experiment compares two conditions on two measures: the figure has two panels "
        "(entropy, largest weight), each with the same two labelled curves, so that scaled and "
        "unscaled can be compared at a glance.",
        "Two Axes side by side; on each, Axes.plot twice against results['d_k'], with "
        "label='scaled' first and label='unscaled' second, then Axes.legend to show the labels.",
        "The first Axes plots the entropies, the second the largest weights; each gets the "
        "'scaled' line, then the 'unscaled' line, both with x data results['d_k'], and then a "
        "legend.",
    ),
)
COLOUR_SCALE = misconception(
    "plot-colour-scale",
    "{what}: heatmap {i} spans the colours from {vmin:.3g} to {vmax:.3g}; the docstring promises "
    "a 0 to 1 colour scale, the same for every map.",
    (
        "Two heatmaps can be compared by eye only if a colour means the same weight in both. "
        "Weights lie between 0 and 1, so the colour scale should too, fixed, in every map.",
        "Pass the colour limits to imshow (vmin and vmax) instead of letting matplotlib stretch "
        "each map's own minimum and maximum over the colours.",
        "Heatmap {i} spans {vmin:.3g} to {vmax:.3g}: call imshow(..., vmin=0, vmax=1) for every "
        "map.",
    ),
)
NO_COLORBAR = misconception(
    "plot-no-colorbar",
    "{what}: the heatmap has no colour bar (the docstring promises one).",
    (
        "Without a colour bar a colour has no number: the reader cannot tell a weight of 0.2 from "
        "one of 0.9.",
        "Keep the image that Axes.imshow returns and pass it to Figure.colorbar, naming the Axes "
        "it belongs to.",
        "Keep the result of ax.imshow(...) in a variable, then call the Figure's colorbar with "
        "that image and ax=ax.",
    ),
)
SPARE_AXES_ON = misconception(
    "plot-spare-axes-on",
    "{what}: {count} Axes left over in the grid hold no head but are still drawn (empty frames "
    "with ticks); the docstring asks to switch them off.",
    (
        "A grid of cols columns often has more cells than there are heads; the cells left over "
        "should vanish, or the reader looks for a head that is not there.",
        "Loop over every Axes of the grid: the ones past the last head get no image and are "
        "switched off with Axes.axis.",
        "{count} Axes are left over: for every Axes after the last head, call its axis method "
        "with 'off', and draw nothing on it.",
    ),
)
HEADS_COLUMN_MAJOR = misconception(
    "plot-heads-column-major",
    "{what} fills the grid column by column (head 1 under head 0); heads go row by row, head 0 at "
    "the top left, head 1 to its right.",
    (
        "A grid of heads is read like text, left to right and then top to bottom: head 0 at the "
        "top left, head 1 to its right. Filled column by column, what the reader takes for head 1 "
        "is another head.",
        "Figure.subplots(rows, cols, squeeze=False) returns a (rows, cols) array of Axes; "
        "flattening it lists them in row order, so head h goes on the h-th one.",
        "Draw head h on the h-th Axes of the flattened (row-major) grid, not on axes[h % rows, h "
        "// rows].",
    ),
)
LAYER_MEAN = misconception(
    "plot-layer-mean",
    "{what} shows {shown}, not sequence 0's weights averaged over the heads, "
    "attn[n][0].mean(dim=0).",
    (
        "One heatmap per layer needs one (T, T) map per layer: that layer's weights for one "
        "sequence with the heads averaged, so that the layers can be compared side by side.",
        "attn[n] is (B, H, T, T): first pick sequence 0 (index the batch axis), which leaves (H, "
        "T, T), then take the mean over the heads, now axis 0.",
        "attn[n][0] is (H, T, T); its mean over dim=0 is the (T, T) map to draw, not a mean over "
        "the batch or over dim=1.",
    ),
)
LOG2_AXIS = misconception(
    "plot-log2-axis",
    "plot_sqrt_dk: the x axis of Axes {i} is {scale}; the docstring promises a log-2 d_k axis.",
    (
        "d_k doubles from one point to the next (8, 16, 32, ...): on a linear axis the small "
        "widths crowd together at the left. On a log-2 axis the points are evenly spaced, and "
        "each step is one doubling.",
        "Set the x scale of both Axes to a logarithmic scale of base 2: Axes.set_xscale, with its "
        "base argument.",
        "Axes {i} is {scale}: call set_xscale('log', base=2) on each of the two Axes.",
    ),
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


PLOT_ATTENTION = CHECKS.exercise("plot_attention", probe=probe.probe_attention)


@PLOT_ATTENTION.check(
    "attention",
    "plot_attention draws the (L, S) weights with query and key labels",
    1,
    inputs=probe.inputs_attention,
)
@no_reference
def verdict_attention(got, want, x):
    what = "plot_attention"
    _start(got, what)
    _count(got, what, 1, "one map")
    _image(got, what, 0, x["weights"])
    _labels(got, what, 0, x["queries"], x["keys"])


@PLOT_ATTENTION.check(
    "attention-colour",
    "plot_attention uses the 0-1 colour scale, with a colour bar",
    1,
    inputs=probe.inputs_attention,
)
@no_reference
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


PLOT_LAYER_MEANS = CHECKS.exercise("plot_layer_means", probe=probe.probe_layers)


@PLOT_LAYER_MEANS.check(
    "layer-means",
    "plot_layer_means draws one head-averaged map per layer, on the 0-1 colour scale",
    1,
    inputs=probe.inputs_layers,
)
@no_reference
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


PLOT_HEADS = CHECKS.exercise("plot_heads", probe=probe.probe_heads)


@PLOT_HEADS.check(
    "heads",
    "plot_heads draws every head in a grid, row by row, spare Axes switched off",
    1,
    inputs=probe.inputs_heads,
)
@no_reference
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


PLOT_SQRT_DK = CHECKS.exercise("plot_sqrt_dk", probe=probe.probe_sqrt_dk)


@PLOT_SQRT_DK.check(
    "sqrt-dk",
    "plot_sqrt_dk draws the four curves on a log-2 d_k axis, with legends",
    1,
    inputs=probe.inputs_sqrt_dk,
)
@no_reference
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
