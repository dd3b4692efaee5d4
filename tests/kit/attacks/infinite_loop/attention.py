"""Attack: loop forever in every call."""

# reported: timeout


def scaled_dot_product_attention(q, k, v, mask=None):
    while True:
        pass


def attention_with_bias(q, k, v, bias, mask=None):
    while True:
        pass
