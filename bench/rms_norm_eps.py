"""Where eps goes in RMSNorm, and when it matters: the largest difference between the
solution's rms_norm (eps inside the root) and eps outside it, or no eps, as the inputs shrink.

    .venv/bin/python bench/rms_norm_eps.py

x ~ N(0, scale²), 1000 vectors of D = 64, float64, eps = 1e-6 (the exercise's default).
Deterministic (seeded): it explains why the rms-norm-eps check draws mean squares near eps.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solutions.modern_blocks import rms_norm  # noqa: E402


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    eps = 1e-6
    print(f"{'scale':>8}{'mean square':>14}{'|inside - outside|':>20}{'|inside - no eps|':>19}")
    for scale in (1.0, 1e-2, 1e-3, 1e-4):
        x = torch.randn(1000, 64, generator=gen, dtype=torch.float64) * scale
        rms = x.pow(2).mean(-1, keepdim=True).sqrt()
        inside = rms_norm(x, eps=eps)
        outside = (inside - x / (rms + eps)).abs().max().item()
        no_eps = (inside - x / rms).abs().max().item()
        print(f"{scale:>8g}{scale**2:>14.0e}{outside:>20.2e}{no_eps:>19.2e}")


if __name__ == "__main__":
    main()
