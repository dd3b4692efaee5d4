"""Mutant: layer_norm returns its result detached ("it is only a normalisation"): the right
values, but no gradient reaches x, the weight or the bias."""

# expects: no-gradient
# loses: layer-norm
from solutions.blocks import FeedForward, TransformerBlock  # noqa: F401
from solutions.blocks import layer_norm as _reference


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    return _reference(x, weight=weight, bias=bias, eps=eps).detach()
