"""Attack: exit with status 0 in the middle of a check."""

# reported: SystemExit
import os
import sys


def scaled_dot_product_attention(q, k, v, mask=None):
    sys.exit(0)


def attention_with_bias(q, k, v, bias, mask=None):
    os._exit(0)
