"""Alternative: the RMS from torch.linalg.vector_norm, half-precision inputs normalised in
float32 (as Hugging Face's LlamaRMSNorm does), RMSNorm keeping its eps as a persistent
buffer (in the state_dict, not a weight), SiLU by hand with an in-place product."""

import torch
import torch.nn.functional as F  # noqa: F401
from torch import nn


def rms_norm(x, weight=None, eps=1e-6):
    dtype = x.dtype
    h = x.to(torch.float32) if dtype in (torch.float16, torch.bfloat16) else x
    D = h.shape[-1]
    rms = torch.linalg.vector_norm(h, dim=-1, keepdim=True) / D**0.5
    y = h / torch.sqrt(rms * rms + eps)
    y = y.to(dtype)
    return y if weight is None else weight * y


class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.register_buffer("eps_t", torch.tensor(float(eps), dtype=torch.float64))

    def forward(self, x):
        return rms_norm(x, weight=self.weight, eps=float(self.eps_t))


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_gate = nn.Linear(d_model, d_ff, bias=False)
        self.w_up = nn.Linear(d_model, d_ff, bias=False)
        self.w_down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        g = self.w_gate(x)
        g = g * torch.sigmoid(g)
        g.mul_(self.w_up(x))
        return self.w_down(g)
