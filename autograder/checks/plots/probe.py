"""Probe side of plots.py's checks: the inputs they draw and what they read back.

Imported by the process that runs student code: nothing here judges or computes an answer.
Each figure is read back as plain data (image arrays, colour limits, tick labels, grid
positions, colour bars, spare Axes, lines, axis scales, legends); figures are closed by
dropping them (no pyplot).
"""

from __future__ import annotations

from typing import Any

import torch

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _draw(gen, low: int, high: int) -> int:
    """An int in [low, high], from the check's generator (every size depends on the seed)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def _tokens(gen, n: int) -> list[str]:
    return [LETTERS[int(i)] for i in torch.randint(len(LETTERS), (n,), generator=gen)]


def _weights(gen, *shape):
    return torch.softmax(torch.randn(*shape, generator=gen) * 2, dim=-1)


def inputs_attention(gen):
    L = _draw(gen, 3, 6)
    S = L + _draw(gen, 1, 3)  # L ≠ S: a transposed map has another shape
    return {
        "weights": _weights(gen, L, S),
        "queries": _tokens(gen, L),
        "keys": _tokens(gen, S),
        # a second call, self-attention: key_tokens left out (the query tokens), a title
        "self": _weights(gen, L, L),
        "title": f"layer {_draw(gen, 0, 5)}, head {_draw(gen, 0, 7)}",
    }


def inputs_layers(gen):
    # B ≠ H ≠ T, so a mean over the wrong axis has another shape or other values.
    B, H, T = _draw(gen, 2, 3), _draw(gen, 4, 5), _draw(gen, 6, 7)
    attn = [_weights(gen, B, H, T, T) for _ in range(_draw(gen, 2, 3))]
    return {"attn": attn, "tokens": _tokens(gen, T)}


def inputs_heads(gen):
    # ceil(H / cols) >= 2 rows and a last row not full: row-major and column-major differ,
    # and there are spare Axes to switch off.
    cols = _draw(gen, 3, 4)
    H = cols + _draw(gen, 1, cols - 1)
    T = _draw(gen, 4, 6)
    return {"weights": _weights(gen, H, T, T), "tokens": _tokens(gen, T), "cols": cols}


def inputs_sqrt_dk(gen):
    n = _draw(gen, 4, 7)
    d_k = 2 ** torch.arange(1, n + 1)
    names = ("entropy_scaled", "entropy_unscaled", "max_weight_scaled", "max_weight_unscaled")
    return {"results": {"d_k": d_k, **{k: torch.rand(n, generator=gen) for k in names}}}


# --------------------------------------------------------------------------- read back


def _not_a_figure(fig) -> dict[str, Any] | None:
    from matplotlib.figure import Figure

    return None if isinstance(fig, Figure) else {"not_a_figure": f"a {type(fig).__name__}"}


def _position(ax) -> tuple[int, int]:
    """The Axes' (row, column) in its grid, or (-1, -1) when it is not a grid cell."""
    spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
    if spec is None:
        return -1, -1
    return int(spec.rowspan.start), int(spec.colspan.start)


def _tick_labels(ax, axis: str) -> str:
    """The Axes' tick labels on `axis`, "|"-joined: its own, or, where it shows none because
    it shares that axis with a panel that does (subplots(sharey=True) labels only the outer
    panels), that panel's: the shared axis has one set of ticks, labelled once."""

    def shown(a) -> str:
        texts = a.get_xticklabels() if axis == "x" else a.get_yticklabels()
        return "|".join(t.get_text() for t in texts)

    own = shown(ax)
    if own.strip("|"):
        return own
    shared = ax.get_shared_x_axes() if axis == "x" else ax.get_shared_y_axes()
    for other in shared.get_siblings(ax):
        if other is not ax and shown(other).strip("|"):
            return shown(other)
    return own


def _shows(mappable, image) -> bool:
    """A colour bar describes the image: it is the image's, or it maps the same values to the
    same colours (a ScalarMappable with the image's limits and colour map)."""
    if mappable is image:
        return True
    try:
        same = mappable.get_clim() == image.get_clim() and mappable.cmap.name == image.cmap.name
    except AttributeError:
        return False
    return bool(same)


def _children(ax, depth: int = 3) -> list[Any]:
    """The Axes inside ax (inset Axes), a few levels down."""
    found = list(getattr(ax, "child_axes", []))[:50]
    if depth > 1:
        found += [grandchild for child in found for grandchild in _children(child, depth - 1)]
    return found


def panels(fig) -> dict[str, Any]:
    """Every heatmap Axes of the figure (in fig.axes order), its colour bars and spare Axes."""
    wrong = _not_a_figure(fig)
    if wrong is not None:
        return wrong
    from matplotlib.collections import QuadMesh

    # A colour bar may sit in an inset Axes (ax.inset_axes), a child of its Axes, not in fig.axes.
    inside = [child for ax in fig.axes for child in _children(ax)]
    colorbars = [
        ax._colorbar for ax in fig.axes + inside if getattr(ax, "_colorbar", None) is not None
    ]
    suptitle = getattr(fig, "_suptitle", None)
    got: dict[str, Any] = {"panels": 0, "spare": 0, "spare_on": 0, "meshes": 0}
    got["suptitle"] = suptitle.get_text() if suptitle is not None else ""
    for ax in fig.axes:
        if getattr(ax, "_colorbar", None) is not None:
            continue
        if not ax.images:
            # a heatmap drawn another way (pcolormesh, matshow is imshow) is named as such
            got["meshes"] += int(any(isinstance(c, QuadMesh) for c in ax.collections))
            got["spare"] += 1
            got["spare_on"] += int(bool(ax.axison) and ax.get_visible())  # drawn, with a frame
            continue
        i = got["panels"]
        image = ax.images[0]
        array = image.get_array()
        array = array.filled(float("nan")) if hasattr(array, "filled") else array
        vmin, vmax = image.get_clim()
        got[f"image{i}"] = torch.as_tensor(array).float()
        got[f"clim{i}"] = torch.tensor(
            [float("nan") if v is None else float(v) for v in (vmin, vmax)], dtype=torch.float64
        )
        got[f"x{i}"] = _tick_labels(ax, "x")
        got[f"y{i}"] = _tick_labels(ax, "y")
        got[f"row{i}"], got[f"col{i}"] = _position(ax)
        got[f"colorbar{i}"] = any(_shows(c.mappable, image) for c in colorbars)
        got[f"title{i}"] = ax.get_title()
        for loc in ("left", "right"):  # the Axes' other titles: set_title(..., loc="left")
            if ax.get_title(loc):
                got[f"title{i}/{loc}"] = ax.get_title(loc)
        got["panels"] += 1
    return got


def probe_attention(mod, x):
    got = panels(mod.plot_attention(x["weights"], x["queries"], x["keys"]))
    try:
        own = panels(mod.plot_attention(x["self"], x["queries"], title=x["title"]))
    except Exception as e:  # noqa: BLE001 (the self-attention call: judged as such)
        own = {"error": f"{type(e).__name__}: {e}"[:300]}
    return {**got, **{f"self/{k}": v for k, v in own.items()}}


def probe_layers(mod, x):
    return panels(mod.plot_layer_means(x["attn"], x["tokens"]))


def probe_heads(mod, x):
    return panels(mod.plot_heads(x["weights"], x["tokens"], cols=x["cols"]))


def probe_sqrt_dk(mod, x):
    fig = mod.plot_sqrt_dk(x["results"])
    if _not_a_figure(fig):
        return _not_a_figure(fig)
    axes = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    got = {"axes": len(axes)}
    for i, ax in enumerate(axes):
        got[f"lines{i}"] = len(ax.get_lines())
        got[f"xscale{i}"] = str(ax.get_xscale())
        got[f"xbase{i}"] = float(getattr(ax.xaxis.get_transform(), "base", float("nan")))
        legend = ax.get_legend()
        got[f"legend{i}"] = legend is not None
        # ax.legend(["scaled", "unscaled"]) names the lines in the legend only, in their order
        named = [t.get_text() for t in legend.get_texts()] if legend is not None else []
        for j, line in enumerate(ax.get_lines()):
            got[f"x{i}_{j}"] = torch.as_tensor(line.get_xdata(), dtype=torch.float32)
            got[f"y{i}_{j}"] = torch.as_tensor(line.get_ydata(), dtype=torch.float32)
            label = str(line.get_label())
            unlabelled = label.startswith("_") and j < len(named)
            got[f"label{i}_{j}"] = named[j] if unlabelled else label
    return got
