"""Generation with and without a KV cache, side by side, from one run.

    python bench/kvcache.py                        # T = 512 new tokens, the default model
    python bench/kvcache.py --tokens 256 --d-model 256 --layers 6 --threads 2

Builds one solutions.kvcache.TinyDecoder (random weights, eval mode, float32), then generates
T tokens greedily from the same prompt twice with solutions.kvcache.greedy_decode: with the cache
(one prefill, then one token per call) and without it (every step recomputes the whole
prefix). Prints tokens per second for both, by wall-clock and by this process's CPU time (the
CPU figure is the one to trust on a shared machine), their ratio, whether both runs chose the
same tokens, and the largest difference between their logits.

Nothing here is graded; docs/kvcache.md quotes one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solutions.kvcache import TinyDecoder, greedy_decode  # noqa: E402


def timed(model, prompt, n, use_cache):
    """(tokens, logits, wall seconds, CPU seconds) of one greedy_decode call."""
    wall, cpu = time.perf_counter(), time.process_time()
    tokens, logits = greedy_decode(model, prompt, n, use_cache=use_cache)
    return tokens, logits, time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=512, help="new tokens T (default 512)")
    parser.add_argument("--prompt", type=int, default=8, help="prompt length (default 8)")
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.tokens < 1 or args.prompt < 1:
        parser.error("--tokens and --prompt must be at least 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = TinyDecoder(args.vocab, args.d_model, args.heads, args.kv_heads, args.layers).eval()
    prompt = torch.randint(0, args.vocab, (1, args.prompt))
    greedy_decode(model, prompt, 4)  # warm-up: the first calls pay for lazy initialisation

    runs = {name: timed(model, prompt, args.tokens, name == "cache") for name in ("cache", "none")}
    print(
        f"TinyDecoder: vocab {args.vocab}, d_model {args.d_model}, {args.heads} heads, "
        f"{args.kv_heads} key/value heads, {args.layers} layers; prompt {args.prompt}, "
        f"T = {args.tokens} new tokens, {args.threads} thread(s), torch {torch.__version__}"
    )
    print(f"{'':>16} {'wall s':>9} {'tok/s wall':>11} {'CPU s':>9} {'tok/s CPU':>10}")
    for name, label in (("cache", "with cache"), ("none", "without cache")):
        _, _, wall, cpu = runs[name]
        print(
            f"{label:>16} {wall:9.2f} {args.tokens / wall:11.1f} {cpu:9.2f} "
            f"{args.tokens / max(cpu, 1e-9):10.1f}"
        )
    (t1, l1, wall1, cpu1), (t2, l2, wall2, cpu2) = runs["cache"], runs["none"]
    print(f"ratio (cache / no cache, tokens per second): wall {wall2 / wall1:.1f}x, "
          f"CPU {cpu2 / max(cpu1, 1e-9):.1f}x")  # fmt: skip
    same = bool(torch.equal(t1, t2))
    print(f"same tokens: {same}; largest logit difference: {(l1 - l2).abs().max().item():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
