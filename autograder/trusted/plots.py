"""Trusted plots: the reference figures `make grade` saves beside the student's (build/).

Drawn with matplotlib's object API (no pyplot): the same content as solutions/plots.py,
written once as one helper that every function uses.
"""

import math


def Figure(*args, **kwargs):  # noqa: N802 (stands for matplotlib's class)
    """matplotlib.figure.Figure, imported on first use: grading any module puts every trusted
    module in place (isolation), and importing matplotlib costs about a second."""
    from matplotlib.figure import Figure as _Figure

    return _Figure(*args, **kwargs)


def _heatmap(ax, weights, rows, cols, title=None):
    image = ax.imshow(weights.detach().cpu().numpy(), vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(cols)), cols, rotation=90)
    ax.set_yticks(range(len(rows)), rows)
    if title:
        ax.set_title(title)
    return image


def plot_attention(weights, query_tokens, key_tokens=None, title=None):
    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.add_subplot()
    image = _heatmap(ax, weights, query_tokens, key_tokens or query_tokens, title)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    fig.colorbar(image, ax=ax)
    return fig


def plot_layer_means(attn, tokens):
    fig = Figure(figsize=(4 * len(attn), 4), layout="constrained")
    for n, (ax, w) in enumerate(
        zip(fig.subplots(1, len(attn), squeeze=False)[0], attn, strict=True)
    ):
        _heatmap(ax, w[0].mean(dim=0), tokens, tokens, f"layer {n}")
    return fig


def plot_heads(weights, tokens, cols=4):
    H = weights.size(0)
    cols = min(cols, H)
    fig = Figure(figsize=(3 * cols, 3 * math.ceil(H / cols)), layout="constrained")
    axes = fig.subplots(math.ceil(H / cols), cols, squeeze=False).flatten()
    for h, ax in enumerate(axes):
        if h < H:
            _heatmap(ax, weights[h], tokens, tokens, f"head {h}")
        else:
            ax.axis("off")
    return fig


def plot_sqrt_dk(results):
    fig = Figure(figsize=(9, 4), layout="constrained")
    for ax, name in zip(fig.subplots(1, 2), ("entropy", "max_weight"), strict=True):
        for tag in ("scaled", "unscaled"):
            ax.plot(results["d_k"], results[f"{name}_{tag}"], marker="o", label=tag)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.set_ylabel(name.replace("_", " "))
        ax.legend()
    return fig
