"""Exercise group 16: MiniLlama, a small LLaMA-style decoder built from the modern pieces.

MiniGPT (gpt.py) is the 2017 recipe: learned token embeddings plus sinusoidal positions,
LayerNorm, GELU, one key/value head per query head. Today's open language models (LLaMA,
Mistral, Qwen, ...) keep the decoder-only plan and change the parts, all of which you built:

    positions      rotary embeddings on queries and keys (rotary.apply_rotary), nothing added
                   to the token embeddings
    normalisation  RMSNorm (modern_blocks.RMSNorm), before each sub-layer (pre-norm) and once
                   at the end (the final norm)
    feed-forward   SwiGLU (modern_blocks.SwiGLU)
    attention      grouped-query attention (gqa.GroupedQueryAttention): H query heads share
                   H_kv key/value heads

You write the attention with rotary embeddings, the block and the model's forward.

Shape legend: B batch, H query heads, H_kv key/value heads, n_rep = H // H_kv, T sequence
length, D = d_model, d_k = D // H (the width of one head, even), V vocabulary size.
Token ids are int64 tensors (B, T); logits are float tensors (B, T, V).
Mask convention: a bool tensor, True = blocked.
"""

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .gqa import GroupedQueryAttention, repeat_kv
from .masks import causal_mask
from .modern_blocks import RMSNorm, SwiGLU
from .rotary import apply_rotary


class RotaryAttention(GroupedQueryAttention):
    """Grouped-query self-attention whose queries and keys are turned by rotary embeddings.

        q = split(w_q(x)) (B, H, T, d_k);   k, v = split(w_k(x)), split(w_v(x)) (B, H_kv, T, d_k)
        q, k = apply_rotary(q, positions, base), apply_rotary(k, positions, base)
        heads = Attention(q, repeat_kv(k), repeat_kv(v), mask)      (v is never rotated)
        out = w_o(merge(heads))

    `__init__(d_model, num_heads, num_kv_heads, base=10000.0)`: GroupedQueryAttention's
    (given): the same checks, attributes (num_heads, num_kv_heads, d_k, n_rep) and
    parameters w_q (D -> D), w_k and w_v (D -> H_kv·d_k), w_o (D -> D), without bias; plus
    `base`, the rotary frequency base.
    """

    def __init__(self, d_model, num_heads, num_kv_heads, base=10000.0):
        super().__init__(d_model, num_heads, num_kv_heads, bias=False)
        self.base = base

    def forward(self, x, positions, mask=None):
        """
        Args:
            x: (B, T, D).
            positions: (T,) int64, the position of each of the T rows (any integers: a cache
                would pass p0 + arange(T); do not assume 0 .. T-1).
            mask: optional bool tensor broadcastable to (B, H, T, T), True = blocked.

        Returns:
            out (B, T, D), weights (B, H, T, T).

        Differentiable: gradients flow from the output back to x and every weight (nothing in
        between under torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (RotaryAttention.forward): about 9 lines, no loop over heads.
        #   1) project and split, as in GroupedQueryAttention.forward: q (B, H, T, d_k);
        #      k and v (B, H_kv, T, d_k).  Use: self.w_q / w_k / w_v, reshape, transpose.
        #   2) turn the queries and the keys (not the values: rotary encodes where a query and
        #      a key are, and the values carry content) by apply_rotary at `positions`, with
        #      self.base.
        #   3) share the key/value heads (repeat_kv, self.n_rep) and attend with the imported
        #      scaled_dot_product_attention, passing the mask -> (B, H, T, d_k), (B, H, T, T).
        #   4) merge the heads back to (B, T, D) and apply self.w_o. Return (out, weights).
        ### BEGIN SOLUTION
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q = apply_rotary(q, positions, self.base)  # (B, H, T, d_k)
        k = apply_rotary(k, positions, self.base)  # (B, H_kv, T, d_k)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)  # (B, H, T, d_k)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        out = heads.transpose(1, 2).reshape(B, T, self.num_heads * self.d_k)  # (B, T, D)
        return self.w_o(out), weights
        ### END SOLUTION


class LlamaBlock(nn.Module):
    """A pre-norm decoder block: RMSNorm before each sub-layer, the residual stream untouched.

        x = x + attn(attn_norm(x), positions, mask)
        x = x + ffn(ffn_norm(x))

    `__init__(d_model, num_heads, num_kv_heads, d_ff, base=10000.0, eps=1e-6)` creates, in
    this order (given): `attn_norm` (RMSNorm), `attn` (RotaryAttention), `ffn_norm` (RMSNorm),
    `ffn` (SwiGLU, D -> d_ff -> D). No dropout, no biases (as in LLaMA).
    """

    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, base=10000.0, eps=1e-6):
        super().__init__()
        self.attn_norm = RMSNorm(d_model, eps)
        self.attn = RotaryAttention(d_model, num_heads, num_kv_heads, base)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, positions, mask=None):
        """x (B, T, D), positions (T,), mask as in RotaryAttention -> (B, T, D).

        Differentiable: gradients flow from the output back to x and every weight (nothing in
        between under torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (LlamaBlock.forward): about 3 lines, the two equations of the docstring.
        #   Pre-norm: each sub-layer reads a normalised copy of x, and its output is added to
        #   x itself (never normalise the sum, which is post-norm, the 2017 layout). Each
        #   sub-layer has its own norm: attn_norm before attn, ffn_norm before ffn. The
        #   attention returns (out, weights): only out goes into the residual stream.
        ### BEGIN SOLUTION
        x = x + self.attn(self.attn_norm(x), positions, mask)[0]  # (B, T, D)
        return x + self.ffn(self.ffn_norm(x))  # (B, T, D)
        ### END SOLUTION


class MiniLlama(nn.Module):
    """A decoder-only language model in LLaMA's layout: logits for the next token everywhere.

        x = token_embed(idx)                                  (B, T, D), no √D, no positions
        x = block_n(... block_1(x, positions, causal mask))   positions = 0 .. T-1
        logits = lm_head(final_norm(x))                       (B, T, V)

    `__init__(vocab_size, d_model=128, num_heads=4, num_kv_heads=2, num_layers=4, d_ff=344,
    max_len=128, base=10000.0, eps=1e-6)` creates, in this order (given): `token_embed`
    (V, D), `blocks` (num_layers LlamaBlocks), `final_norm` (RMSNorm), `lm_head` (D -> V,
    no bias). The head is untied, as in LLaMA: lm_head has a (V, D) weight of its own,
    unlike MiniGPT's, which shares token_embed's. No dropout.

    Positions enter only through the rotary embeddings inside attention: the angles are
    computed from the positions, not read from a table, so forward takes any T; max_len is
    the context that generation feeds (gpt.generate crops to model.max_len).
    """

    def __init__(
        self,
        vocab_size,
        d_model=128,
        num_heads=4,
        num_kv_heads=2,
        num_layers=4,
        d_ff=344,
        max_len=128,
        base=10000.0,
        eps=1e-6,
    ):
        super().__init__()
        self.max_len = max_len
        self.token_embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.token_embed.weight, std=0.02)
        self.blocks = nn.ModuleList(
            LlamaBlock(d_model, num_heads, num_kv_heads, d_ff, base, eps) for _ in range(num_layers)
        )
        self.final_norm = RMSNorm(d_model, eps)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        """idx (B, T) int64 token ids -> logits (B, T, V).

        Differentiable: gradients flow from the output back to every weight (nothing in between
        under torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (MiniLlama.forward): about 7 lines: the docstring's three equations.
        #   1. Embed the tokens, (B, T) -> (B, T, D). Nothing else is added and nothing is
        #      scaled: the positions come in through the rotary embeddings, and every block
        #      normalises what it reads.
        #   2. positions 0 .. T-1 and one causal mask (T, T), both on idx's device, shared by
        #      every block.  Use: torch.arange, causal_mask.
        #   3. The blocks in order, each (B, T, D) -> (B, T, D).
        #   4. The final norm, then the head: (B, T, D) -> (B, T, V). Pre-norm blocks never
        #      normalise the residual stream itself, so without the final norm the head reads
        #      a stream whose scale grows with depth.
        ### BEGIN SOLUTION
        B, T = idx.shape
        x = self.token_embed(idx)  # (B, T) -> (B, T, D)
        positions = torch.arange(T, device=idx.device)  # (T,)
        mask = causal_mask(T, device=idx.device)  # (T, T), True = the future
        for block in self.blocks:
            x = block(x, positions, mask)  # (B, T, D)
        return self.lm_head(self.final_norm(x))  # (B, T, D) -> (B, T, V)
        ### END SOLUTION
