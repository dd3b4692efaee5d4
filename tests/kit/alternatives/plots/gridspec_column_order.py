"""Alternative: a GridSpec whose Axes are created column by column but each head placed in
its row-major cell (head h at row h // cols, column h % cols), spare cells created and
switched off with set_axis_off, colour limits set after imshow with set_clim, the colour bar
through fig.colorbar(mappable, ax=...), and the log-2 axis set before plotting."""

import math

from matplotlib.figure import Figure


def _heat(ax, weights, rows, cols):
    image = ax.imshow(weights.detach().cpu().float().numpy(), cmap="magma")
    image.set_clim(0.0, 1.0)
    ax.set_xticks(list(range(len(cols))), labels=list(cols))
    ax.set_yticks(list(range(len(rows))), labels=list(rows))
    return image


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    keys = query_tokens if key_tokens is None else key_tokens
    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.subplots()
    image = _heat(ax, weights, query_tokens, keys)
    ax.set(xlabel="key", ylabel="query", title=title or "")
    fig.colorbar(mappable=image, ax=ax)
    return fig


def plot_layer_means(attn, tokens):
    fig = Figure(layout="constrained")
    grid = fig.add_gridspec(1, len(attn))
    for n, layer in enumerate(attn):
        _heat(fig.add_subplot(grid[0, n]), layer.mean(dim=1)[0], tokens, tokens)
    return fig


def plot_heads(weights, tokens, cols=4):
    H = weights.size(0)
    cols = min(cols, H)
    rows = math.ceil(H / cols)
    fig = Figure(layout="constrained")
    grid = fig.add_gridspec(rows, cols)
    for c in range(cols):  # column by column; each head still goes to its row-major cell
        for r in range(rows):
            ax = fig.add_subplot(grid[r, c])
            h = r * cols + c
            if h < H:
                _heat(ax, weights[h], tokens, tokens)
            else:
                ax.set_axis_off()
    return fig


def plot_sqrt_dk(results):
    fig = Figure(layout="constrained")
    axes = fig.subplots(nrows=1, ncols=2)
    for ax, key in zip(axes, ("entropy", "max_weight"), strict=True):
        ax.set_xscale("log", base=2)
        for tag in ("scaled", "unscaled"):
            ax.plot(results["d_k"].numpy(), results[f"{key}_{tag}"].numpy(), label=tag)
        ax.legend()
    return fig
