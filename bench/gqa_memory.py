"""Key/value memory of multi-head, grouped-query and multi-query attention, side by side.

    python bench/gqa_memory.py                                  # D = 4096, H = 32, T = 1024
    python bench/gqa_memory.py --d-model 128 --heads 4 --kv-heads 4,2,1 --dtype float32

For each num_kv_heads, builds solutions.gqa.GroupedQueryAttention, runs its key and value
projections on T random tokens of one sequence and measures the tensors a decoder's KV cache
would hold (k.nbytes + v.nbytes, the (B, H_kv, T, d_k) keys and values of one layer). The
figure is checked against solutions.gqa.kv_cache_bytes, and the per-token figure is scaled to
a whole model (--layers) at a longer context (--context) to show what it means in practice.
The query, output and attention itself are unchanged by H_kv; only k and v shrink.

Nothing here is graded; docs/gqa.md quotes one run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solutions.gqa import GroupedQueryAttention, kv_cache_bytes  # noqa: E402


def measure(d_model, num_heads, num_kv_heads, T, dtype):
    """(bytes of k and v for T tokens, key/value projection parameters), from real tensors."""
    model = GroupedQueryAttention(d_model, num_heads, num_kv_heads).to(dtype).eval()
    x = torch.randn(1, T, d_model, dtype=dtype)
    d_k = d_model // num_heads
    with torch.no_grad():
        k = model.w_k(x).view(1, T, num_kv_heads, d_k).transpose(1, 2)
        v = model.w_v(x).view(1, T, num_kv_heads, d_k).transpose(1, 2)
    measured = k.nbytes + v.nbytes
    assert measured == kv_cache_bytes(d_model, num_heads, num_kv_heads, T, dtype)
    params = model.w_k.weight.numel() + model.w_v.weight.numel()
    return measured, params


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d-model", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", default="32,8,4,1", help="comma-separated num_kv_heads")
    p.add_argument("--T", type=int, default=1024, help="tokens actually projected")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--layers", type=int, default=32, help="for the whole-model column")
    p.add_argument("--context", type=int, default=4096, help="for the whole-model column")
    args = p.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    D, H = args.d_model, args.heads
    print(
        f"d_model = {D}, num_heads = {H}, d_k = {D // H}, dtype = {args.dtype}, "
        f"T = {args.T} tokens of one sequence, one layer (measured: k.nbytes + v.nbytes)"
    )
    header = (
        f"{'kind':<5} {'H_kv':>4} {'n_rep':>5} {'k+v, T tokens':>14} {'per token':>10} "
        f"{'vs MHA':>7} {'w_k+w_v params':>15} "
        f"{f'{args.layers} layers x {args.context} tokens':>24}"
    )
    print(header)
    print("-" * len(header))
    base = None
    for H_kv in (int(h) for h in args.kv_heads.split(",")):
        measured, params = measure(D, H, H_kv, args.T, dtype)
        base = base or measured
        kind = "MHA" if H_kv == H else "MQA" if H_kv == 1 else "GQA"
        per_token = measured / args.T
        model = per_token * args.context * args.layers
        print(
            f"{kind:<5} {H_kv:>4} {H // H_kv:>5} {_size(measured):>14} {_size(per_token):>10} "
            f"{measured / base:>7.3f} {params:>15,} {_size(model):>24}"
        )


if __name__ == "__main__":
    main()
