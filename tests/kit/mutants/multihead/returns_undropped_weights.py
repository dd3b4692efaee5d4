"""Mutant: returns the weights from before dropout."""

# expects: mha-dropout-not-on-weights
# loses: dropout
from solutions.multihead import MultiHeadAttention as _Reference
from solutions.multihead import merge_heads, split_heads

from .attention import scaled_dot_product_attention


class MultiHeadAttention(_Reference):
    def forward(self, query, key=None, value=None, mask=None):
        key = query if key is None else key
        value = key if value is None else value
        q = split_heads(self.w_q(query), self.num_heads)
        k = split_heads(self.w_k(key), self.num_heads)
        v = split_heads(self.w_v(value), self.num_heads)
        _, weights = scaled_dot_product_attention(q, k, v, mask)
        heads = self.dropout(weights) @ v
        return self.w_o(merge_heads(heads)), weights
