"""Alternative: repeat the key/value heads first, then rotary_attention (rotary.py) turns q
and k and attends; rotating after the repeat is the same, each head turned alike. Imports
from the earlier modules as a student's file does; a weight[idx] embedding, an indexed loop
and final_norm(x) @ lm_head.weight.T in the model."""

from solutions.llama import LlamaBlock as _Block
from solutions.llama import MiniLlama as _Model

from .gqa import GroupedQueryAttention, repeat_kv
from .masks import causal_mask
from .rotary import rotary_attention


class RotaryAttention(GroupedQueryAttention):
    def __init__(self, d_model, num_heads, num_kv_heads, base=10000.0):
        super().__init__(d_model, num_heads, num_kv_heads, bias=False)
        self.base = base

    def forward(self, x, positions, mask=None):
        q = self.w_q(x).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)
        k = self.w_k(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)
        v = self.w_v(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        heads, weights = rotary_attention(q, k, v, positions, mask, self.base)
        return self.w_o(heads.transpose(1, 2).flatten(2)), weights


class LlamaBlock(_Block):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, base=10000.0, eps=1e-6):
        super().__init__(d_model, num_heads, num_kv_heads, d_ff, base, eps)
        self.attn = RotaryAttention(d_model, num_heads, num_kv_heads, base)  # this file's

    def forward(self, x, positions, mask=None):
        attended, _ = self.attn(self.attn_norm(x), positions, mask)
        h = x + attended
        return h + self.ffn(self.ffn_norm(h))


class MiniLlama(_Model):
    def forward(self, idx):
        T = idx.size(1)
        positions = idx.new_tensor(list(range(T)))
        mask = causal_mask(T, device=idx.device)
        x = self.token_embed.weight[idx]
        for i in range(len(self.blocks)):
            x = self.blocks[i](x, positions, mask)
        return self.final_norm(x) @ self.lm_head.weight.T
