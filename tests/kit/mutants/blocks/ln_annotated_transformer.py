"""Mutant: the Annotated Transformer's LayerNorm: unbiased std, eps added to the std."""

# expects: ln-unbiased-std-plus-eps
# loses: layer-norm, layer-norm-eps
from solutions.blocks import FeedForward, TransformerBlock  # noqa: F401


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    y = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y
