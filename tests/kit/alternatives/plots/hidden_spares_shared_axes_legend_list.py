"""Alternative: imshow with vmin/vmax; plot_attention's colour bar from a ScalarMappable of
the same 0-1 scale and colour map (not the image itself); plot_layer_means's panels share
their y axis (subplots(sharey=True) labels it once, on the first panel); plot_heads hides its
spare Axes with set_visible(False); plot_sqrt_dk names its lines in ax.legend([...]) only.
Each was read back as a mistake before (4 / 5): a missing colour bar, missing tick labels,
spare Axes "still drawn", unlabelled lines."""

import math

from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure


def _np(t):
    return t.detach().cpu().numpy()


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    key_tokens = query_tokens if key_tokens is None else key_tokens
    fig = Figure(figsize=(5, 4))
    ax = fig.add_subplot(1, 1, 1)
    ax.imshow(_np(weights), vmin=0.0, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(key_tokens)), labels=list(key_tokens), rotation=90)
    ax.set_yticks(range(len(query_tokens)), labels=list(query_tokens))
    fig.colorbar(ScalarMappable(norm=Normalize(0, 1), cmap="viridis"), ax=ax)
    if title is not None:
        ax.set_title(title)
    return fig


def plot_layer_means(attn, tokens):
    fig = Figure(figsize=(4 * len(attn), 4))
    axes = fig.subplots(1, len(attn), squeeze=False, sharey=True)[0]
    for i, (ax, a) in enumerate(zip(axes, attn, strict=True)):
        ax.imshow(_np(a[0].mean(dim=0)), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(tokens)), labels=list(tokens), rotation=90)
        ax.set_yticks(range(len(tokens)), labels=list(tokens))
        ax.set_title(f"layer {i}")
    return fig


def plot_heads(weights, tokens, cols=4):
    H = weights.shape[0]
    fig = Figure(figsize=(3 * min(cols, H), 3 * math.ceil(H / cols)))
    axes = fig.subplots(math.ceil(H / cols), min(cols, H), squeeze=False).flatten()
    for h, ax in enumerate(axes):
        if h >= H:
            ax.set_visible(False)
            continue
        ax.imshow(_np(weights[h]), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(tokens)), labels=list(tokens), rotation=90)
        ax.set_yticks(range(len(tokens)), labels=list(tokens))
        ax.set_title(f"head {h}")
    return fig


def plot_sqrt_dk(results):
    d_k = _np(results["d_k"])
    fig = Figure(figsize=(9, 4))
    for ax, key in zip(fig.subplots(1, 2), ("entropy", "max_weight"), strict=True):
        for kind in ("scaled", "unscaled"):
            ax.plot(d_k, _np(results[f"{key}_{kind}"]), marker="o")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.legend(["scaled", "unscaled"])
    return fig
