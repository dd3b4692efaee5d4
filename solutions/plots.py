"""Exercise group 8: looking at attention, with matplotlib.

Shape legend: B batch, H heads, L query length, S key length, T sequence length.
Every function returns a matplotlib Figure (matplotlib.figure.Figure: no pyplot, no window;
save it with fig.savefig("name.png")). The grader reads back what was drawn: the image
array of each heatmap (ax.images[0].get_array()), the tick labels, and the lines' data.
"""

import math

from matplotlib.figure import Figure


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    """One attention map as a heatmap: row i is query i, column j is key j.

    Args:
        weights: (L, S) attention weights (a tensor; .detach().cpu() it first).
        query_tokens: L strings, the row labels; key_tokens: S strings, the column labels
            (default: the query tokens, for self-attention).
        title: an optional title for the Axes.

    Returns:
        a Figure with one heatmap Axes (the weights as drawn, colour scale 0 to 1) and
        a colour bar.
    """
    # TODO (plot_attention): about 10 lines.
    #   1. A Figure (figsize about (5, 4)) with one Axes.  Use: Figure, Figure.add_subplot.
    #   2. Draw the weights as an image on a fixed colour scale from 0 to 1. imshow puts row 0
    #      at the top, so query i is row i, as in the matrix. matplotlib wants a detached CPU
    #      array.  Use: ax.imshow (vmin, vmax, cmap), Tensor.detach/.cpu/.numpy.
    #   3. Labels: the key tokens on the x ticks (rotated 90°), the query tokens on the y
    #      ticks; the axis labels "key" and "query".  Use: ax.set_xticks, ax.set_yticks.
    #   4. A colour bar for the image, the title when given; return the figure.
    ### BEGIN SOLUTION
    key_tokens = query_tokens if key_tokens is None else key_tokens
    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(weights.detach().cpu().numpy(), vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(key_tokens)), key_tokens, rotation=90)
    ax.set_yticks(range(len(query_tokens)), query_tokens)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if title:
        ax.set_title(title)
    fig.colorbar(image, ax=ax)
    return fig
    ### END SOLUTION


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
    # TODO (plot_layer_means): about 10 lines.
    #   1. A Figure about 4 inches wide per layer, with one row of num_layers Axes.
    #      Use: Figure.subplots with squeeze=False.
    #   2. For layer n: the mean over the heads of sequence 0, (H, T, T) -> (T, T), drawn on a
    #      colour scale from 0 to 1, the tokens as tick labels on both axes, the title "layer n".
    ### BEGIN SOLUTION
    fig = Figure(figsize=(4 * len(attn), 4), layout="constrained")
    axes = fig.subplots(1, len(attn), squeeze=False)[0]
    for n, (ax, weights) in enumerate(zip(axes, attn, strict=True)):
        mean = weights[0].detach().cpu().mean(dim=0)  # (H, T, T) -> (T, T)
        ax.imshow(mean.numpy(), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(tokens)), tokens, rotation=90)
        ax.set_yticks(range(len(tokens)), tokens)
        ax.set_title(f"layer {n}")
    return fig
    ### END SOLUTION


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
    # TODO (plot_heads): about 12 lines.
    #   1. A grid of at most `cols` columns and as many rows as H heads need; with fewer heads
    #      than cols, only H columns.  Use: math.ceil, min.
    #   2. All the Axes in one flat sequence, row by row.  Use: Figure.subplots with
    #      squeeze=False, then flatten.
    #   3. Head h: its (T, T) map on a colour scale from 0 to 1, tick labels, the title
    #      "head h". The Axes after the last head are switched off and hold no image.
    #      Use: ax.axis.
    ### BEGIN SOLUTION
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
    ### END SOLUTION


def plot_sqrt_dk(results):
    """The √d_k experiment's curves (diagnostics.sqrt_dk_experiment's dict).

    Returns:
        a Figure with two Axes: the mean entropy against d_k, then the mean largest weight
        against d_k; each has two lines, labelled "scaled" and "unscaled" (in that order),
        x data results["d_k"], a log-2 x axis and a legend.
    """
    # TODO (plot_sqrt_dk): about 10 lines.
    #   1. A Figure (about 9 x 4) with two Axes side by side: the entropy, then the largest
    #      weight.
    #   2. On each, two lines against results["d_k"], "scaled" first, then "unscaled", with
    #      markers and those labels; a log-2 x axis, axis labels and a legend.
    #      Use: ax.plot(..., label=...), ax.set_xscale, ax.legend.
    ### BEGIN SOLUTION
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
    ### END SOLUTION
