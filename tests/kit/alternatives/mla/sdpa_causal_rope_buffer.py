"""Alternative: the naive form through F.scaled_dot_product_attention(is_causal=True), the
absorbed form by einsum with its own float64 rotary from a frequency table kept as a
persistent buffer (inv_freq: in the state_dict, not a weight), the mask by torch.where."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from .attention import scaled_dot_product_attention  # noqa: F401
from .rotary import apply_rotary


def _rope(x, pos, theta):
    h = x.shape[-1] // 2
    a = pos.to(torch.float64)[:, None] * theta[None, :]
    c, s = a.cos().to(x.dtype), a.sin().to(x.dtype)
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_c, d_c_q, d_head, d_rope, base=10000.0):
        super().__init__()
        if d_rope % 2:
            raise ValueError(f"rotary embeddings pair the features: d_rope = {d_rope} is odd")
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
        i = torch.arange(d_rope // 2, dtype=torch.float64)
        self.register_buffer("inv_freq", base ** (-2 * i / d_rope))

    def forward(self, x):
        B, T, _ = x.shape
        H, dh, dr = self.num_heads, self.d_head, self.d_rope
        pos = torch.arange(T, device=x.device)
        cq = self.q_norm(self.w_dq(x))
        qn = self.w_uq(cq).unflatten(-1, (H, dh)).transpose(1, 2)
        qr = apply_rotary(self.w_qr(cq).unflatten(-1, (H, dr)).transpose(1, 2), pos, self.base)
        ckv = self.kv_norm(self.w_dkv(x))
        kn = self.w_uk(ckv).unflatten(-1, (H, dh)).transpose(1, 2)
        v = self.w_uv(ckv).unflatten(-1, (H, dh)).transpose(1, 2)
        kr = apply_rotary(self.w_kr(x), pos, self.base)[:, None].expand(B, H, T, dr)
        q = torch.cat((qn, qr), -1)
        k = torch.cat((kn, kr), -1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.w_o(o.transpose(1, 2).flatten(2))

    def absorbed_weights(self):
        H, dh = self.num_heads, self.d_head
        uq = self.w_uq.weight.unflatten(0, (H, dh))
        uk = self.w_uk.weight.unflatten(0, (H, dh))
        uv = self.w_uv.weight.unflatten(0, (H, dh))
        wo = self.w_o.weight.unflatten(1, (H, dh))  # (D, H, dh)
        wq_abs = torch.einsum("hdq,hdc->hqc", uq, uk)
        wo_abs = torch.einsum("hdc,ohd->hco", uv, wo)
        return wq_abs, wo_abs

    def forward_absorbed(self, x, cache=None, absorbed=None):
        B, T, _ = x.shape
        H, dr = self.num_heads, self.d_rope
        wq_abs, wo_abs = self.absorbed_weights() if absorbed is None else absorbed
        p0 = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(p0, p0 + T, device=x.device)
        cq = self.q_norm(self.w_dq(x))
        qr = _rope(self.w_qr(cq).view(B, T, H, dr).permute(0, 2, 1, 3), pos, self.inv_freq)
        ckv_new = self.kv_norm(self.w_dkv(x))
        kr_new = _rope(self.w_kr(x), pos, self.inv_freq)
        if cache is None:
            ckv, kr = ckv_new, kr_new
        else:
            ckv = torch.cat((cache[0], ckv_new), 1)
            kr = torch.cat((cache[1], kr_new), 1)
        S = ckv.shape[1]
        qlat = torch.einsum("btq,hqc->bhtc", cq, wq_abs)
        sc = torch.einsum("bhtc,bsc->bhts", qlat, ckv) + torch.einsum("bhtr,bsr->bhts", qr, kr)
        sc = sc / math.sqrt(self.d_head + dr)
        qpos = pos[:, None]
        kpos = torch.arange(S, device=x.device)[None, :]
        sc = torch.where(
            kpos <= qpos, sc, torch.tensor(float("-inf"), dtype=sc.dtype, device=sc.device)
        )
        w = torch.softmax(sc, dim=-1)
        lat = torch.einsum("bhts,bsc->bhtc", w, ckv)
        out = torch.einsum("bhtc,hcd->btd", lat, wo_abs)
        return out, (ckv, kr)


_KINDS = {"mha", "gqa", "mqa", "mla"}


def cache_bytes_per_token(kind, num_heads, d_head, num_kv_heads=None, d_c=None, d_rope=None,
                          dtype=torch.float32):  # fmt: skip
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of mha, gqa, mqa, mla; got {kind!r}")
    per = {
        "mha": lambda: 2 * num_heads * d_head,
        "gqa": lambda: 2 * num_kv_heads * d_head,
        "mqa": lambda: 2 * d_head,
        "mla": lambda: d_c + d_rope,
    }[kind]()
    return int(per * dtype.itemsize)
