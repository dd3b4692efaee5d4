"""Judge side of plots.py's checks: misconceptions, models of wrong pictures, verdicts.

What each figure shows is compared with the weights it was given (no stored reference is
needed), and every promise of the docstrings is checked: the 0-1 colour scale and the colour
bar, the heads' grid read row by row with the spare Axes switched off, the log-2 x axis and
the legends of the √d_k curves.
"""

from __future__ import annotations

import math

import torch

from ...core.check import CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import assert_close, tensor
from . import probe

CHECKS = CheckList("plots")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- verdicts


def _start(got, what):
    if "not_a_figure" in got:
        raise Failure(MISTAKES["plot-not-a-figure"], what=what, got=got["not_a_figure"])


def _count(got, what, expected, detail):
    if got.get("panels") == 0 and got.get("meshes"):
        raise Failure(MISTAKES["plot-not-imshow"], what=what)
    if got.get("panels") != expected:
        raise Failure(
            MISTAKES["plot-panels"],
            what=what,
            got=got.get("panels"),
            expected=expected,
            detail=detail,
        )


def _labels(got, what, i, rows, cols):
    for axis, key, tokens in (("x", "x", cols), ("y", "y", rows)):
        if got.get(f"{key}{i}") != "|".join(tokens):
            raise Failure(
                MISTAKES["plot-tick-labels"],
                what=what,
                axis=axis,
                got=got.get(f"{key}{i}"),
                expected=tokens,
            )


def _image(got, what, i, expected, candidates=()):
    value = tensor(got, f"image{i}", f"{what}'s heatmap {i}")
    if value.shape == expected.T.shape and value.shape != expected.shape:
        raise Failure(MISTAKES["plot-transposed"], what=what)
    tensor(got, f"image{i}", f"{what}'s heatmap {i}", shape=expected.shape)
    assert_close(
        value,
        expected.float(),
        f"{what}'s heatmap {i}",
        [(MISTAKES["plot-transposed"], expected.T.float(), {}), *candidates],
    )


def _colour_scale(got, what, i):
    vmin, vmax = tensor(got, f"clim{i}", f"{what}'s colour limits").tolist()
    if not (vmin == 0 and vmax == 1):
        raise Failure(MISTAKES["plot-colour-scale"], what=what, i=i, vmin=vmin, vmax=vmax)


def _one_map(got):
    """plot_attention ran and drew one map: what the feedback calls it."""
    what = "plot_attention"
    _start(got, what)
    _count(got, what, 1, "one map")
    return what


PLOT_ATTENTION = CHECKS.exercise("plot_attention", probe=probe.probe_attention)


@PLOT_ATTENTION.check("attention", inputs=probe.inputs_attention)
@no_reference
def verdict_attention(got, want, x):
    what = _one_map(got)
    _image(got, what, 0, x["weights"])
    _labels(got, what, 0, x["queries"], x["keys"])
    # The self-attention call: key_tokens left out (the query tokens), a title given.
    own = {k.removeprefix("self/"): v for k, v in got.items() if k.startswith("self/")}
    if "error" in own:
        raise Failure(MISTAKES["plot-default-keys"], error=own["error"])
    _count(own, what, 1, "one map")
    _image(own, what, 0, x["self"])
    _labels(own, what, 0, x["queries"], x["queries"])
    titles = [own.get(key) for key in ("title0", "title0/left", "title0/right", "suptitle")]
    if x["title"] not in titles:
        raise Failure(MISTAKES["plot-title-ignored"], title=x["title"], got=own.get("title0"))


@PLOT_ATTENTION.check("attention-colour", inputs=probe.inputs_attention)
@no_reference
def verdict_attention_colour(got, want, x):
    what = _one_map(got)
    _colour_scale(got, what, 0)
    if not got.get("colorbar0"):
        raise Failure(MISTAKES["plot-no-colorbar"], what=what)


def _layer_candidates(w):
    """What a wrong reduction of one layer's (B, H, T, T) weights draws."""

    def named(shown, value):
        return (MISTAKES["plot-layer-mean"], value, {"shown": shown})

    return [
        named("the sum over the heads", lambda: w[0].sum(dim=0).float()),
        named("the mean over the batch and the heads", lambda: w.mean(dim=(0, 1)).float()),
        named("head 0 of sequence 0 only", lambda: w[0, 0].float()),
        named("head 0 averaged over the batch", lambda: w.mean(dim=0)[0].float()),
    ]


PLOT_LAYER_MEANS = CHECKS.exercise("plot_layer_means", probe=probe.probe_layers)


@PLOT_LAYER_MEANS.check("layer-means", inputs=probe.inputs_layers)
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


@PLOT_HEADS.check("heads", inputs=probe.inputs_heads)
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
        raise Failure(MISTAKES["plot-heads-column-major"], what=what)
    for i, h in enumerate(row_major):
        if not 0 <= h < H:
            detail = f"heatmap {i} sits in grid cell {cells[i]}, where no head goes row by row"
            raise Failure(MISTAKES["plot-panels"], what=what, got=H, expected=H, detail=detail)
        _image(got, what, i, weights[h])
        _labels(got, what, i, tokens, tokens)
    if got.get("spare_on"):
        raise Failure(MISTAKES["plot-spare-axes-on"], what=what, count=got["spare_on"])


PLOT_SQRT_DK = CHECKS.exercise("plot_sqrt_dk", probe=probe.probe_sqrt_dk)


@PLOT_SQRT_DK.check("sqrt-dk", inputs=probe.inputs_sqrt_dk)
@no_reference
def verdict_sqrt_dk(got, want, x):
    _start(got, "plot_sqrt_dk")
    if got.get("axes") != 2:
        raise Failure(
            MISTAKES["plot-sqrt-dk-lines"], detail=f"expected 2 Axes, got {got.get('axes')}"
        )
    r = x["results"]
    n = r["d_k"].numel()
    for i, name in enumerate(("entropy", "max_weight")):
        if got.get(f"lines{i}") != 2:
            raise Failure(
                MISTAKES["plot-sqrt-dk-lines"],
                detail=f"Axes {i} has {got.get(f'lines{i}')} lines, expected 2",
            )
        for j, tag in enumerate(("scaled", "unscaled")):
            if got.get(f"label{i}_{j}") != tag:
                raise Failure(
                    MISTAKES["plot-sqrt-dk-lines"],
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
            raise Failure(MISTAKES["plot-log2-axis"], i=i, scale=shown)
        if not got.get(f"legend{i}"):
            raise Failure(MISTAKES["plot-sqrt-dk-lines"], detail=f"Axes {i} has no legend")
