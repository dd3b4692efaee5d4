"""Mutant: q is scaled by 1/√d before the feature map, as softmax attention scales scores."""

# expects: linear-scaled
# loses: linear, linear-causal, linear-cost
import math

from solutions.efficient import chunked_attention, local_attention, strided_attention  # noqa: F401
from solutions.efficient import linear_attention as _linear


def linear_attention(q, k, v, causal=False, eps=1e-6):
    return _linear(q / math.sqrt(q.size(-1)), k, v, causal=causal, eps=eps)
