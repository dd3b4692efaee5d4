"""Alternative: matshow with a Normalize(0, 1) norm, float64 numpy arrays, the head mean as a
sum divided by H, one add_subplot per head (no spare Axes at all), semilogx with base 2."""

import math

import numpy as np
from matplotlib.colors import Normalize
from matplotlib.figure import Figure


def _show(ax, weights, rows, cols):
    image = ax.matshow(np.asarray(weights, dtype=np.float64), norm=Normalize(0.0, 1.0))
    ax.set_xticks(np.arange(len(cols)))
    ax.set_xticklabels(cols, rotation=90)
    ax.set_yticks(np.arange(len(rows)))
    ax.set_yticklabels(rows)
    return image


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    fig = Figure()
    ax = fig.add_subplot(1, 1, 1)
    _show(ax, weights.detach().cpu().numpy(), query_tokens, key_tokens or query_tokens)
    if title is not None:
        ax.set_title(title)
    fig.colorbar(ax.images[0], ax=ax)
    return fig


def plot_layer_means(attn, tokens):
    fig = Figure(figsize=(4 * len(attn), 4))
    for n, layer in enumerate(attn):
        first = layer[0].detach().cpu()
        ax = fig.add_subplot(1, len(attn), n + 1)
        _show(ax, (first.sum(dim=0) / first.shape[0]).numpy(), tokens, tokens)
        ax.set_title(f"layer {n}")
    return fig


def plot_heads(weights, tokens, cols=4):
    H = weights.shape[0]
    cols = min(cols, H)
    rows = math.ceil(H / cols)
    fig = Figure(figsize=(3 * cols, 3 * rows))
    for h in range(H):
        ax = fig.add_subplot(rows, cols, h + 1)
        _show(ax, weights[h].detach().cpu().numpy(), tokens, tokens)
    return fig


def plot_sqrt_dk(results):
    fig = Figure(figsize=(9, 4))
    x = results["d_k"].tolist()
    for i, name in enumerate(("entropy", "max_weight")):
        ax = fig.add_subplot(1, 2, i + 1)
        for tag in ("scaled", "unscaled"):
            ax.semilogx(x, results[f"{name}_{tag}"].tolist(), "o-", base=2, label=tag)
        ax.set_xlabel("d_k")
        ax.legend(loc="best")
    return fig
