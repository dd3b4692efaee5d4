"""SwiGLU against the GELU FeedForward at (about) equal parameter count, side by side.

    .venv/bin/python bench/swiglu_vs_ffn.py                  # D = 256, B = 8, T = 128
    .venv/bin/python bench/swiglu_vs_ffn.py --d-model 512 --batch 4 --seq 256

FeedForward(D, 4D) (blocks.py: two linear layers with bias) has 8D² + 5D parameters; SwiGLU
has three bias-free matrices, 3·D·d_ff, so at equal count d_ff = 8D/3 (LLaMA's choice, rounded
here to a multiple of 8); both then cost about 16·D² multiply-adds per token. A third row gives
SwiGLU at the FeedForward's width, d_ff = 4D (1.5x the weights). All are the kit's solutions,
run in one process, interleaved in 3 rounds, under torch.no_grad(); each time is the best
round's median of --repeats calls after warm-up calls. The ratio is
what to read: absolute times depend on the machine and on what else runs on it.

Nothing here is graded and no test depends on these figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solutions.blocks import FeedForward  # noqa: E402
from solutions.modern_blocks import SwiGLU  # noqa: E402


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _time(module, x, repeats: int) -> float:
    times = []
    with torch.no_grad():
        for _ in range(3):
            module(x)
        for _ in range(repeats):
            start = time.perf_counter()
            module(x)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8, help="B")
    parser.add_argument("--seq", type=int, default=128, help="T")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    D = args.d_model
    d_ff_swiglu = max(8, round(8 * D / 3 / 8) * 8)
    ffn = FeedForward(D, 4 * D, activation="gelu").eval()
    swiglu = SwiGLU(D, d_ff_swiglu).eval()
    wide = SwiGLU(D, 4 * D).eval()  # the same hidden width as the FeedForward: 1.5x the weights
    x = torch.randn(args.batch, args.seq, D)
    rows = {"ffn": [], "swiglu": [], "wide": []}
    for _ in range(3):  # interleaved rounds: a slow moment of the machine hits both
        rows["ffn"].append(_time(ffn, x, args.repeats))
        rows["swiglu"].append(_time(swiglu, x, args.repeats))
        rows["wide"].append(_time(wide, x, args.repeats))
    t_ffn, t_swiglu, t_wide = (min(rows[k]) for k in ("ffn", "swiglu", "wide"))
    n_ffn, n_swiglu, n_wide = _count(ffn), _count(swiglu), _count(wide)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), x {tuple(x.shape)}")
    print(f"{'module':<34}{'parameters':>12}{'forward (ms)':>15}")
    print(f"{f'FeedForward({D}, {4 * D}), GELU':<34}{n_ffn:>12,}{t_ffn * 1e3:>15.3f}")
    print(f"{f'SwiGLU({D}, {d_ff_swiglu})':<34}{n_swiglu:>12,}{t_swiglu * 1e3:>15.3f}")
    print(f"{f'SwiGLU({D}, {4 * D}), same width':<34}{n_wide:>12,}{t_wide * 1e3:>15.3f}")
    print(
        f"ratio SwiGLU / FeedForward: parameters {n_swiglu / n_ffn:.3f}, "
        f"forward time {t_swiglu / t_ffn:.2f}; at the same width: parameters "
        f"{n_wide / n_ffn:.3f}, forward time {t_wide / t_ffn:.2f}"
    )


if __name__ == "__main__":
    main()
