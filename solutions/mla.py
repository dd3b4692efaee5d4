"""Exercise group 15: multi-head latent attention (MLA), as in DeepSeek-V2.

A decoder's KV cache holds, per token and layer, a key and a value for every key/value head:
2 · H · d_head numbers for multi-head attention (GQA and MQA shrink H to H_kv or 1). MLA
(DeepSeek-AI, 2024) caches one small latent per token instead, c_KV of d_c numbers, from
which every head's key and value are *projected up*; and since a product of linear maps is one
linear map, the up-projections can be folded ("absorbed") into the query and into the output
projection, so that decoding never builds a key or a value at all: it attends over the
latents themselves.

Rotary positions break that folding (a rotation between q and W_UK does not commute with it),
so MLA keeps position apart: a small *decoupled* rotary part of d_rope features. Each head
has its own rotary query, but the rotary key is one vector per token, shared by all heads
(like a key in multi-query attention), and it is cached beside c_KV. A head's score adds the
two parts and is scaled by the width of the whole head:

    score_h(t, s) = (q_nope_h(t) · k_nope_h(s) + q_rope_h(t) · k_rope(s)) / sqrt(d_head + d_rope)

The queries also go through a latent (c_Q, d_c_q numbers), which saves parameters and
activation memory, not cache. Both latents are normalised with RMSNorm (as DeepSeek-V2 does;
its weights are the parameters q_norm and kv_norm, eps 1e-6); the cache holds c_KV *after*
its norm, and k_rope *after* its rotation (each at its own position, as in kvcache.py).

Rotary convention of this kit (rotary.py's apply_rotary, "halves", as in LLaMA's Hugging Face
code and GPT-NeoX): feature i of the rotary part is paired with feature i + d_rope/2, rotated
by p · base^(-2i/d_rope). Only the d_rope rotary features are rotated, never the d_head
"nope" features and never the values. (DeepSeek's released code uses the interleaved pairs;
the attention is the same up to a fixed permutation of the rotary weights.)

Shape legend: B batch, H heads, T the number of new tokens in a call, S the number of keys
(cached tokens and new ones), D = d_model, d_c the key/value latent width, d_c_q the query
latent width, d_head the width of a head's "nope" (non-rotary) query, key and value, d_rope
the width of the rotary part (even).
Mask convention: a bool tensor, True = blocked.
"""

import math

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .rotary import apply_rotary


class MultiHeadLatentAttention(nn.Module):
    """Causal multi-head latent attention (DeepSeek-V2's MLA) with decoupled rotary keys.

    For the tokens x (B, T, D) at positions p = 0 .. T-1 (head h owns the features
    h·d_head .. (h+1)·d_head - 1 of w_uq, w_uk, w_uv and of w_o's input, and the features
    h·d_rope .. (h+1)·d_rope - 1 of w_qr, as split_heads splits them):

        c_Q   = q_norm(x W_DQᵀ)                          (B, T, d_c_q)   the query latent
        q_nope_h = c_Q W_UQᵀ[h]                          (B, T, d_head)  per head
        q_rope_h = rotary(c_Q W_QRᵀ[h], p)               (B, T, d_rope)  per head
        c_KV  = kv_norm(x W_DKVᵀ)                        (B, T, d_c)     the key/value latent
        k_nope_h = c_KV W_UKᵀ[h],  v_h = c_KV W_UVᵀ[h]   (B, T, d_head)  per head
        k_rope   = rotary(x W_KRᵀ, p)                    (B, T, d_rope)  ONE for all heads
        head_h = softmax(score_h + causal mask) v_h, score_h as in the module docstring
        out    = concat(head_1, ..., head_H) W_Oᵀ         (B, T, D)

    Parameters, created in this order (the grader loads its own weights by these names;
    every nn.Linear has no bias; weights are (out_features, in_features) as nn.Linear keeps
    them):
        w_dq: D -> d_c_q        q_norm: nn.RMSNorm(d_c_q, eps=1e-6)
        w_uq: d_c_q -> H·d_head     w_qr: d_c_q -> H·d_rope
        w_dkv: D -> d_c         kv_norm: nn.RMSNorm(d_c, eps=1e-6)
        w_uk: d_c -> H·d_head       w_uv: d_c -> H·d_head
        w_kr: D -> d_rope       w_o: H·d_head -> D

    Args:
        d_model: D. num_heads: H. d_c: the key/value latent width. d_c_q: the query latent
        width. d_head: the width of a head's nope query, key and value. d_rope: the width of
        the rotary part (even). base: the rotary base (apply_rotary's).

    Raises:
        ValueError: when d_rope is odd (rotary pairs features); the message gives d_rope.

    You may add helper methods of your own; the grader calls only forward, absorbed_weights
    and forward_absorbed, and relies on the attributes listed above and below.
    """

    def __init__(self, d_model, num_heads, d_c, d_c_q, d_head, d_rope, base=10000.0):
        super().__init__()
        if d_rope % 2:
            raise ValueError(f"rotary embeddings pair the features: d_rope = {d_rope} is odd")
        # The parameters, in this order (the grader loads its own weights by these names).
        self.w_dq = nn.Linear(d_model, d_c_q, bias=False)
        self.q_norm = nn.RMSNorm(d_c_q, eps=1e-6)
        self.w_uq = nn.Linear(d_c_q, num_heads * d_head, bias=False)
        self.w_qr = nn.Linear(d_c_q, num_heads * d_rope, bias=False)
        self.w_dkv = nn.Linear(d_model, d_c, bias=False)
        self.kv_norm = nn.RMSNorm(d_c, eps=1e-6)
        self.w_uk = nn.Linear(d_c, num_heads * d_head, bias=False)
        self.w_uv = nn.Linear(d_c, num_heads * d_head, bias=False)
        self.w_kr = nn.Linear(d_model, d_rope, bias=False)
        self.w_o = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.d_model, self.num_heads, self.d_c, self.d_c_q = d_model, num_heads, d_c, d_c_q
        self.d_head, self.d_rope, self.base = d_head, d_rope, base

    def forward(self, x):
        """The naive form (what training runs): every head's keys and values built in full.

        Args:
            x: (B, T, D), the tokens at positions 0 .. T-1.

        Returns:
            (B, T, D): causal self-attention (token t attends to tokens 0 .. t).

        Differentiable: gradients flow from the output back to x and every weight (nothing in
        between under torch.no_grad, .detach(), .item() or NumPy).
        """
        # TODO (forward): about 15 lines, no loop over tokens or heads.
        #   1) positions 0 .. T-1 (torch.arange on x's device).
        #   2) query path: c_Q = q_norm(w_dq(x)); q_nope from w_uq and q_rope from w_qr, each
        #      split into heads: (B, T, H·w) -> (B, H, T, w) with view + transpose; rotate
        #      q_rope only (apply_rotary(..., positions, self.base)), never q_nope.
        #   3) key/value path: c_KV = kv_norm(w_dkv(x)); k_nope and v from w_uk and w_uv, split
        #      into heads. k_rope = apply_rotary(w_kr(x), ...): (B, T, d_rope), one rotary key
        #      per token; give it a head axis of size 1 and expand it to H heads (all heads
        #      share it).
        #   4) each head's query is [q_nope, q_rope] and key [k_nope, k_rope] (torch.cat on the
        #      last dim): the dot product then adds the two parts, and the scale must be
        #      1 / sqrt(d_head + d_rope), the width of the whole head.
        #   5) causal mask (T, T), True = blocked (a key after the query); attend with
        #      scaled_dot_product_attention, merge the heads to (B, T, H·d_head), apply w_o.
        ### BEGIN SOLUTION
        B, T, _ = x.shape
        H, d_head, d_rope = self.num_heads, self.d_head, self.d_rope
        positions = torch.arange(T, device=x.device)
        # 1) the query path, through the latent c_Q
        c_q = self.q_norm(self.w_dq(x))  # (B, T, d_c_q)
        q_nope = self.w_uq(c_q).view(B, T, H, d_head).transpose(1, 2)  # (B, H, T, d_head)
        q_rope = self.w_qr(c_q).view(B, T, H, d_rope).transpose(1, 2)  # (B, H, T, d_rope)
        q_rope = apply_rotary(q_rope, positions, self.base)
        # 2) the key/value path, through the latent c_KV; the rotary key from x, one per token
        c_kv = self.kv_norm(self.w_dkv(x))  # (B, T, d_c)
        k_nope = self.w_uk(c_kv).view(B, T, H, d_head).transpose(1, 2)  # (B, H, T, d_head)
        v = self.w_uv(c_kv).view(B, T, H, d_head).transpose(1, 2)  # (B, H, T, d_head)
        k_rope = apply_rotary(self.w_kr(x), positions, self.base)  # (B, T, d_rope)
        k_rope = k_rope[:, None].expand(B, H, T, d_rope)  # shared by every head
        # 3) attend: q·k = q_nope·k_nope + q_rope·k_rope, scaled by 1/sqrt(d_head + d_rope)
        q = torch.cat([q_nope, q_rope], dim=-1)  # (B, H, T, d_head + d_rope)
        k = torch.cat([k_nope, k_rope], dim=-1)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        heads, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, H, T, d_head)
        # 4) concatenate the heads and project out
        return self.w_o(heads.transpose(1, 2).reshape(B, T, H * d_head))
        ### END SOLUTION

    def absorbed_weights(self):
        """The up-projections folded into the query and into the output projection.

        Per head h, with W_UQ[h], W_UK[h], W_UV[h] the (d_head, d_c_q), (d_head, d_c),
        (d_head, d_c) row blocks of w_uq.weight, w_uk.weight, w_uv.weight, and W_O[h] the
        (D, d_head) column block of w_o.weight:

            q_nope_h · k_nope_h = (c_Q W_UQ[h]ᵀ) (c_KV W_UK[h]ᵀ)ᵀ = (c_Q W_UQ[h]ᵀ W_UK[h]) c_KVᵀ
            head_h W_O[h]ᵀ = (A_h c_KV W_UV[h]ᵀ) W_O[h]ᵀ = (A_h c_KV) (W_UV[h]ᵀ W_O[h]ᵀ)

        Returns:
            (w_q_absorbed (H, d_c_q, d_c), w_o_absorbed (H, d_c, D)):
            w_q_absorbed[h] = W_UQ[h]ᵀ W_UK[h] (c_Q w_q_absorbed[h] is head h's query in the
            latent space) and w_o_absorbed[h] = W_UV[h]ᵀ W_O[h]ᵀ (head h's weighted latents
            times w_o_absorbed[h], summed over h, is the output).
        """
        # TODO (absorbed_weights): about 6 lines, no loop over heads.
        #   - nn.Linear keeps weight as (out_features, in_features): w_uk.weight is
        #     (H·d_head, d_c) and head h owns rows h·d_head .. (h+1)·d_head - 1, so view it as
        #     (H, d_head, d_c) (the same for w_uq and w_uv). A view as (H, d_c, d_head) has the
        #     right number of elements and mixes the heads' rows: transpose, never re-view.
        #   - w_o.weight is (D, H·d_head): head h owns columns; view it as (D, H, d_head) and
        #     permute to (H, d_head, D).
        #   - Batched matrix products over the head axis (@ or torch.einsum).
        ### BEGIN SOLUTION
        H, d_head, D = self.num_heads, self.d_head, self.d_model
        w_uq = self.w_uq.weight.view(H, d_head, self.d_c_q)
        w_uk = self.w_uk.weight.view(H, d_head, self.d_c)
        w_uv = self.w_uv.weight.view(H, d_head, self.d_c)
        w_o = self.w_o.weight.view(D, H, d_head).permute(1, 2, 0)  # (H, d_head, D)
        return w_uq.transpose(1, 2) @ w_uk, w_uv.transpose(1, 2) @ w_o
        ### END SOLUTION

    def forward_absorbed(self, x, cache=None, absorbed=None):
        """The inference form: attention over the cached latents, no key or value built.

        x holds the T tokens that follow the p0 cached ones (p0 = 0 without a cache); they sit
        at positions p0 .. p0 + T - 1 and attend causally to all S = p0 + T tokens:

            c_Q = q_norm(x W_DQᵀ);  q_lat_h = c_Q w_q_absorbed[h]   (B, H, T, d_c)
            q_rope_h = rotary(c_Q W_QRᵀ[h], positions)              (B, H, T, d_rope)
            c_KV, k_rope of the new tokens as in forward (normed; rotated at their positions),
                appended to the cached ones along the token axis    (B, S, d_c), (B, S, d_rope)
            score_h = (q_lat_h c_KVᵀ + q_rope_h k_ropeᵀ) / sqrt(d_head + d_rope)   (B, H, T, S)
            out = Σ_h softmax(score_h + causal mask) c_KV w_o_absorbed[h]          (B, T, D)

        Args:
            x: (B, T, D), the new tokens (a whole prompt, or one token in a decoding step).
            cache: None, or the pair (c_kv (B, p0, d_c), k_rope (B, p0, d_rope)) that an
                earlier call returned (or any pair of such tensors: it is used as given).
            absorbed: None (then use self.absorbed_weights()), or a pair (w_q_absorbed
                (H, d_c_q, d_c), w_o_absorbed (H, d_c, D)) to use instead; w_uq, w_uk, w_uv
                and w_o are then not used at all.

        Returns:
            (out (B, T, D), cache): the new cache is the pair (c_kv (B, S, d_c), k_rope
            (B, S, d_rope)): the old tokens first, then the new ones. Nothing else is cached:
            no key or value per head. With the same weights, out equals the rows of
            forward(all S tokens) for the new tokens, to float32 rounding.
        """
        # TODO (forward_absorbed): about 18 lines, no loop over tokens or heads.
        #   1) p0 = the number of cached tokens (0 without a cache); positions p0 .. p0+T-1.
        #   2) the new tokens' c_Q, q_rope, c_KV and k_rope as in forward (same norms, same
        #      rotation, at these positions); concatenate c_KV and k_rope after the cached
        #      ones (torch.cat along dim 1). That pair is the new cache.
        #   3) the latent query per head: c_Q (B, T, d_c_q) with w_q_absorbed (H, d_c_q, d_c)
        #      -> (B, H, T, d_c) (torch.einsum, or unsqueeze and @).
        #   4) scores (B, H, T, S): latent query against c_KV, plus q_rope against k_rope (both
        #      keys are shared by all heads: give them a head axis of size 1). Scale by
        #      1 / sqrt(d_head + d_rope) yourself: the query here is d_c + d_rope wide, but the
        #      scores are the naive form's, so their scale is too.
        #   5) causal mask (T, S): the query at position p0 + i may see key j when j <= p0 + i
        #      (compare positions; a (T, T) triangle is wrong when p0 > 0); masked_fill with
        #      -inf, softmax over the keys.
        #   6) the weighted latents (B, H, T, d_c) times w_o_absorbed, summed over the heads
        #      -> (B, T, D). Return it and the new cache.
        ### BEGIN SOLUTION
        B, T, _ = x.shape
        H, d_rope = self.num_heads, self.d_rope
        w_q, w_o = self.absorbed_weights() if absorbed is None else absorbed
        p0 = 0 if cache is None else cache[0].size(1)
        positions = torch.arange(p0, p0 + T, device=x.device)
        # 1) the new tokens' latents and rotary parts
        c_q = self.q_norm(self.w_dq(x))  # (B, T, d_c_q)
        q_rope = self.w_qr(c_q).view(B, T, H, d_rope).transpose(1, 2)  # (B, H, T, d_rope)
        q_rope = apply_rotary(q_rope, positions, self.base)
        c_kv = self.kv_norm(self.w_dkv(x))  # (B, T, d_c)
        k_rope = apply_rotary(self.w_kr(x), positions, self.base)  # (B, T, d_rope)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)  # (B, S, d_c)
            k_rope = torch.cat([cache[1], k_rope], dim=1)  # (B, S, d_rope)
        # 2) the query in the latent space: W_UK absorbed
        q_lat = torch.einsum("btq,hqc->bhtc", c_q, w_q)  # (B, H, T, d_c)
        # 3) scores against the shared latents and rotary keys, the naive form's scale
        scores = q_lat @ c_kv[:, None].transpose(-2, -1)  # (B, H, T, d_c) x (B, 1, d_c, S)
        scores = scores + q_rope @ k_rope[:, None].transpose(-2, -1)  # (B, H, T, S)
        scores = scores / math.sqrt(self.d_head + d_rope)
        key_positions = torch.arange(c_kv.size(1), device=x.device)
        mask = key_positions[None, :] > positions[:, None]  # (T, S), True = a future key
        weights = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        # 4) the weighted latents, W_UV and W_O absorbed: summed over the heads
        latents = weights @ c_kv[:, None]  # (B, H, T, S) x (B, 1, S, d_c) -> (B, H, T, d_c)
        out = torch.einsum("bhtc,hcd->btd", latents, w_o)  # (B, T, D)
        return out, (c_kv, k_rope)
        ### END SOLUTION


def cache_bytes_per_token(kind, num_heads, d_head, num_kv_heads=None, d_c=None, d_rope=None,
                          dtype=torch.float32):  # fmt: skip
    """The bytes one attention layer caches for each token of one sequence.

    Args:
        kind: "mha" (H key heads and H value heads), "gqa" (num_kv_heads of each), "mqa" (one
            of each) or "mla" (the latent c_KV and the rotary key).
        num_heads: H. d_head: the width of one key (or value) head.
        num_kv_heads: H_kv, for "gqa" only.
        d_c, d_rope: the latent and rotary widths, for "mla" only.
        dtype: the dtype of the cached tensors (torch.float32, torch.bfloat16, ...).

    Returns:
        An int: mha 2·H·d_head, gqa 2·H_kv·d_head, mqa 2·d_head, mla d_c + d_rope elements
        (one latent serves keys and values, one rotary key serves every head), times the
        bytes of one element of dtype.

    Raises:
        ValueError: for any other kind (the message names the four).
    """
    # TODO (cache_bytes_per_token): about 10 lines.
    #   - The elements per token of each kind, as in Returns; keys AND values count for
    #     mha, gqa and mqa; mla caches c_KV once (it serves both) and the one rotary key.
    #   - The bytes per element: torch.empty((), dtype=dtype).element_size() (or
    #     dtype.itemsize); never assume 4. Return a Python int.
    ### BEGIN SOLUTION
    if kind == "mha":
        elements = 2 * num_heads * d_head  # a key and a value per head
    elif kind == "gqa":
        elements = 2 * num_kv_heads * d_head
    elif kind == "mqa":
        elements = 2 * d_head
    elif kind == "mla":
        elements = d_c + d_rope  # one latent for keys and values, one shared rotary key
    else:
        raise ValueError(f"kind must be 'mha', 'gqa', 'mqa' or 'mla', got {kind!r}")
    return int(elements) * torch.empty((), dtype=dtype).element_size()
    ### END SOLUTION
