"""mla: the solution against PyTorch's own attention and RMSNorm (an independent oracle), the
absorbed form against the naive one, the cache sizes against gqa's, and the judge's float64
models against the solution (they name the mistakes, so they must be right first)."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import SOLUTIONS, submission_with

from autograder.checks.mla import judge_models as models
from autograder.run.engine import grade
from autograder.run.submission import Submission
from autograder.trusted.rotary import apply_rotary
from solutions import gqa, mla

CONFIGS = [(24, 3, 10, 12, 8, 6, 10000.0), (32, 4, 12, 14, 6, 4, 300.0)]


def _layer(cfg, seed):
    torch.manual_seed(seed)
    layer = mla.MultiHeadLatentAttention(*cfg[:6], base=cfg[6]).eval()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            p.copy_(1 + 0.2 * torch.randn_like(p) if "norm" in name else torch.randn_like(p))
            if "norm" not in name:
                p.mul_(1.5 / math.sqrt(p.size(1)))
    return layer


def _oracle(layer, x):
    """MLA built from F.rms_norm, the trusted (complex-number) rotary and
    F.scaled_dot_product_attention(is_causal=True), every head's key and value in full."""
    B, T, _ = x.shape
    H, d, r = layer.num_heads, layer.d_head, layer.d_rope
    pos = torch.arange(T)

    def rms(t, norm):
        return F.rms_norm(t, (t.size(-1),), norm.weight, eps=1e-6)

    def heads(t, w):
        return t.view(B, T, H, w).permute(0, 2, 1, 3)

    c_q = rms(F.linear(x, layer.w_dq.weight), layer.q_norm)
    c_kv = rms(F.linear(x, layer.w_dkv.weight), layer.kv_norm)
    q_rope = apply_rotary(heads(F.linear(c_q, layer.w_qr.weight), r), pos, layer.base)
    k_rope = apply_rotary(F.linear(x, layer.w_kr.weight), pos, layer.base)
    q = torch.cat([heads(F.linear(c_q, layer.w_uq.weight), d), q_rope], -1)
    k = torch.cat(
        [heads(F.linear(c_kv, layer.w_uk.weight), d), k_rope.unsqueeze(1).repeat(1, H, 1, 1)], -1
    )
    v = heads(F.linear(c_kv, layer.w_uv.weight), d)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # scale 1/sqrt(d + r)
    return F.linear(out.transpose(1, 2).flatten(2), layer.w_o.weight)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_forward_equals_pytorch_attention(cfg):
    layer = _layer(cfg, seed=cfg[0])
    x = torch.randn(2, 7, cfg[0], generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(layer(x), _oracle(layer, x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_absorbed_equals_naive_and_caches_only_the_latents(cfg):
    layer = _layer(cfg, seed=cfg[1])
    D, d_c, d_rope = cfg[0], cfg[2], cfg[5]
    xs = [torch.randn(2, T, D, generator=torch.Generator().manual_seed(T)) for T in (5, 1, 2, 1)]
    cache, outs = None, []
    with torch.no_grad():
        for x in xs:
            out, cache = layer.forward_absorbed(x, cache)
            outs.append(out)
        full = layer(torch.cat(xs, dim=1))
    torch.testing.assert_close(torch.cat(outs, dim=1), full, **models.OWN_TOL)
    assert [tuple(t.shape) for t in cache] == [(2, 9, d_c), (2, 9, d_rope)]


def test_cache_bytes_against_gqa_and_deepseek_v2():
    for dtype in (torch.float32, torch.bfloat16):
        for kind, H_kv in (("mha", 8), ("gqa", 2), ("mqa", 1)):
            want = gqa.kv_cache_bytes(8 * 64, 8, H_kv, 1, dtype)
            assert mla.cache_bytes_per_token(kind, 8, 64, num_kv_heads=H_kv, dtype=dtype) == want
    # DeepSeek-V2 (H = 128, d_head = 128, d_c = 512, d_rope = 64): 576 elements against 32 768,
    # as many as GQA with 2.25 key/value heads.
    mla_bytes = mla.cache_bytes_per_token("mla", 128, 128, d_c=512, d_rope=64)
    assert mla_bytes == 576 * 4 and mla.cache_bytes_per_token("mha", 128, 128) == 32768 * 4
    with pytest.raises(ValueError):
        mla.cache_bytes_per_token("mlp", 8, 64)


def test_judge_models_equal_the_solution():
    cfg_t = CONFIGS[1]
    layer = _layer(cfg_t, seed=3)
    cfg = dict(zip(("D", "H", "d_c", "d_c_q", "d_head", "d_rope", "base"), cfg_t, strict=True))
    state = {k: v.detach().clone() for k, v in layer.state_dict().items()}
    x = torch.randn(1, 6, cfg["D"])
    with torch.no_grad():
        torch.testing.assert_close(models.naive(x, cfg, state), layer(x), **models.MODEL_TOL)
        for got, want in zip(models.absorb(cfg, state), layer.absorbed_weights(), strict=True):
            torch.testing.assert_close(got, want, **models.MODEL_TOL)
        c_kv, k_rope = torch.randn(1, 4, cfg["d_c"]), torch.randn(1, 4, cfg["d_rope"])
        w_q, w_o = layer.absorbed_weights()
        want = layer.forward_absorbed(x[:, :3], (c_kv, k_rope), (w_q, w_o))
        got = models.step(x[:, :3], cfg, state, c_kv, k_rope, w_q, w_o)
        for g, w in zip(got, (want[0], *want[1]), strict=True):
            torch.testing.assert_close(g, w, **models.MODEL_TOL)


def test_a_crash_in_forward_is_not_charged_again_by_the_absorbed_equivalence(tmp_path):
    """forward rotating the shared rope key in DeepSeek's (B, T, 1, d_rope) layout raises in
    this kit's apply_rotary (it reads T = 1): reference, causal and rope-part charge the
    crash; absorbed-equals-naive, whose absorbed calls are right, passes (it said
    "forward_absorbed raised an error"). A crash cannot be a mutant (mutants are named)."""
    right = (
        "        k_rope = apply_rotary(self.w_kr(x), positions, self.base)  # (B, T, d_rope)\n"
        "        k_rope = k_rope[:, None].expand(B, H, T, d_rope)  # shared by every head\n"
    )
    source = (SOLUTIONS / "mla.py").read_text()
    assert source.count(right) == 1
    wrong = source.replace(
        right,
        "        k_rope = apply_rotary(self.w_kr(x).unsqueeze(2), positions, self.base)\n"
        "        k_rope = k_rope.transpose(1, 2).expand(B, H, T, d_rope)\n",
    )
    results = grade(Submission(submission_with(tmp_path, {"mla": wrong})), ["mla"])
    lost = {r.check_id.split(".", 1)[1]: r.misconception for r in results if not r.passed}
    assert lost == {"reference": "crash", "causal": "crash", "rope-part": "crash"}, lost
