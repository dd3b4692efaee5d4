"""Alternative: the solution's figures, with plot_attention's title set flush left on its Axes
(ax.set_title(title, loc="left"), a common style for panel titles) and a labelled colour bar."""

import math

from matplotlib.figure import Figure


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    """One attention map as a heatmap: row i is query i, column j is key j."""
    if key_tokens is None:
        key_tokens = query_tokens
    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(weights.detach().cpu().numpy(), vmin=0.0, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(key_tokens)), labels=key_tokens, rotation=90)
    ax.set_yticks(range(len(query_tokens)), labels=query_tokens)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if title is not None:
        ax.set_title(title, loc="left", fontsize="medium")
    fig.colorbar(image, ax=ax, label="weight")
    return fig


def plot_layer_means(attn, tokens):
    """One heatmap per layer: that layer's weights averaged over the heads, sequence 0.

    Args:
        attn: a list of num_layers tensors (B, H, T, T), as MiniGPT(idx, return_attn=True)
            returns them.
        tokens: T strings, the labels of sequence 0.

    Returns:
        a Figure with num_layers heatmap Axes side by side, layer 0 first; Axes n shows
        attn[n][0].mean(dim=0), (T, T), on a 0 to 1 colour scale.
    """
    fig = Figure(figsize=(4 * len(attn), 4), layout="constrained")
    axes = fig.subplots(1, len(attn), squeeze=False)[0]
    for n, (ax, weights) in enumerate(zip(axes, attn, strict=True)):
        mean = weights[0].detach().cpu().mean(dim=0)  # (H, T, T) -> (T, T)
        ax.imshow(mean.numpy(), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(tokens)), tokens, rotation=90)
        ax.set_yticks(range(len(tokens)), tokens)
        ax.set_title(f"layer {n}")
    return fig


def plot_heads(weights, tokens, cols=4):
    """Every head of one layer in a grid, head 0 at the top left, row by row.

    Args:
        weights: (H, T, T), one layer's weights for one sequence (e.g. attn[-1][0]).
        tokens: T strings.
        cols: heads per row; the grid has ceil(H / cols) rows.

    Returns:
        a Figure whose heatmap Axes are, in order, heads 0 .. H-1 (Axes left over in the
        last row are switched off and hold no image).
    """
    H = weights.size(0)
    cols = min(cols, H)
    rows = math.ceil(H / cols)
    fig = Figure(figsize=(3 * cols, 3 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).flatten()
    for h, ax in enumerate(axes):
        if h >= H:
            ax.axis("off")
            continue
        ax.imshow(weights[h].detach().cpu().numpy(), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(tokens)), tokens, rotation=90)
        ax.set_yticks(range(len(tokens)), tokens)
        ax.set_title(f"head {h}")
    return fig


def plot_sqrt_dk(results):
    """The √d_k experiment's curves (diagnostics.sqrt_dk_experiment's dict).

    Returns:
        a Figure with two Axes: the mean entropy against d_k, then the mean largest weight
        against d_k; each has two lines, labelled "scaled" and "unscaled" (in that order),
        x data results["d_k"], a log-2 x axis and a legend.
    """
    fig = Figure(figsize=(9, 4), layout="constrained")
    d_k = results["d_k"].cpu().numpy()
    for ax, name in zip(fig.subplots(1, 2), ("entropy", "max_weight"), strict=True):
        for tag in ("scaled", "unscaled"):
            ax.plot(d_k, results[f"{name}_{tag}"].cpu().numpy(), marker="o", label=tag)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.set_ylabel("mean entropy (nats)" if name == "entropy" else "mean largest weight")
        ax.legend()
    return fig
