"""Rotary embeddings in float32 against the float64 closed form, and what bfloat16 positions
cost: the figures behind the closed-form check's allowance (docs/rotary.md).

    PYTHONPATH=. .venv/bin/python bench/rotary_precision.py

Prints, for the common float32 computation (LLaMA's Hugging Face code: inverse frequencies,
angles, cos and sin in float32), the largest error against the float64 closed form per unit of
position, in float32 epsilons times the row's largest |x|; the same for the solution (angles
in float64, cos/sin cast to float32); the largest error of positions rounded to bfloat16 and
float16; and how far the score of two all-ones vectors falls with the offset (the long-range
decay of Su et al., 2021), for two bases. Deterministic (seeded); nothing here is graded.
Instructor side: it imports solutions/, which the student copy leaves out.
"""

from __future__ import annotations

import torch

from solutions.rotary import apply_rotary

EPS = torch.finfo(torch.float32).eps


def llama_float32(x, positions, base):
    d = x.size(-1)
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    emb = torch.outer(positions.float(), inv_freq).repeat(1, 2)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()


def main():
    gen = torch.Generator().manual_seed(0)
    slope = {"float32 angles (LLaMA/HF)": 0.0, "solution (float64 angles)": 0.0}
    rounded = {torch.bfloat16: 0.0, torch.float16: 0.0}
    for base in (100.0, 10000.0, 500000.0, 1e6):
        for d in (4, 16, 64, 128):
            positions = torch.randint(0, 10000, (400,), generator=gen)
            x = torch.randn(2, 400, d, generator=gen)
            exact = apply_rotary(x.double(), positions, base)
            scale = x.abs().amax(-1, keepdim=True).double() * positions.double()[:, None]
            for name, got in (
                ("float32 angles (LLaMA/HF)", llama_float32(x, positions, base)),
                ("solution (float64 angles)", apply_rotary(x, positions, base)),
            ):
                excess = ((got.double() - exact).abs() - 1e-5 - 1.3e-6 * exact.abs()).clamp(min=0)
                slope[name] = max(slope[name], float((excess / scale.clamp(min=1)).max()) / EPS)
            for dt in rounded:
                wrong = apply_rotary(x.double(), positions.to(dt).double(), base)
                rounded[dt] = max(rounded[dt], float((wrong - exact).abs().max()))
    print("largest float32 error beyond atol/rtol, per unit of position x max|x_row|:")
    for name, value in slope.items():
        print(f"  {name:28s} {value:.3f} eps  (the check allows 4 eps)")
    print("largest error with positions rounded (p < 10000, |x| ~ N(0, 1)):")
    for dt, value in rounded.items():
        print(f"  {str(dt):28s} {value:.3f}")
    print("score of two all-ones vectors (d = 64) at offset k, relative to k = 0:")
    ones = torch.ones(1, 64, dtype=torch.float64)
    offsets = [0, 1, 10, 100, 1000, 4000]
    for base in (10000.0, 500000.0):
        row = []
        for k in offsets:
            a = apply_rotary(ones, torch.tensor([k]), base)
            row.append(float(a @ ones.T) / 64)
        print(
            f"  base {base:>8g}: "
            + "  ".join(f"k={k}: {v:+.3f}" for k, v in zip(offsets, row, strict=True))
        )


if __name__ == "__main__":
    main()
