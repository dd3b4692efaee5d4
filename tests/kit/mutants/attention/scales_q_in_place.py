"""Mutant: scales the queries in place (q /= √d_k) before attending: the right values, but the
caller's q is divided by √d_k after the call, and autograd refuses the in-place change of a
tensor that requires a gradient (a layer's projected queries). The attention itself is the
solution's (on q as it was), so only the change in place differs."""

# expects: changed-input
# loses: reference
import math

from solutions.attention import attention_with_bias  # noqa: F401
from solutions.attention import scaled_dot_product_attention as _reference


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = math.sqrt(q.size(-1))
    q /= scale  # the caller's q, divided in place
    return _reference(q * scale, k, v, mask=mask)
