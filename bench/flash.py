"""Forward plus backward: peak memory and wall time of FlashAttention against autograd through
quadratic attention and against PyTorch's fused attention, as T grows, side by side.

    make bench-flash                         # CPU, T = 1k .. 16k, B = 1, H = 1, d = 64
    make bench-flash T=1024,4096             # other lengths (THREADS=1: one torch thread)
    python bench/flash.py --device cuda --lengths 1024,8192

Each (method, T) is measured in a fresh Python process (attention_memory.py says why and how:
the RSS high-water mark on Linux, torch.cuda.max_memory_allocated on CUDA). What one call is:
out = f(q, k, v); out.backward(grad_out), with q, k, v leaves that require gradients, so the
peak holds what forward saves for backward and everything backward allocates, gradients
included. Time: the fastest of the calls after the first.

    quadratic      solutions.attention.scaled_dot_product_attention, autograd through it
    sdpa           torch.nn.functional.scaled_dot_product_attention (a fused kernel), autograd
    flash          solutions.flash.flash_attention (tiles in a Python loop), causal=False
    flash-causal   the same with causal=True (tiles above the diagonal skipped)

Nothing here is graded and no test depends on these figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from attention_memory import _reset_peak, _rss_kib  # noqa: E402  (the same measurement)

METHODS = ("quadratic", "sdpa", "flash", "flash-causal")
ABOUT = {
    "quadratic": "solutions.attention.scaled_dot_product_attention, autograd through it",
    "sdpa": "torch.nn.functional.scaled_dot_product_attention (fused kernel), autograd",
    "flash": "solutions.flash.flash_attention (autograd.Function, tiles in Python)",
    "flash-causal": "solutions.flash.flash_attention(causal=True): tiles above diagonal skipped",
}


def measure(method, T, d, block, device, repeats, threads=0) -> dict:
    import torch

    if threads:
        torch.set_num_threads(threads)
    import torch.nn.functional as F

    sys.path.insert(0, str(ROOT))
    from solutions.attention import scaled_dot_product_attention
    from solutions.flash import flash_attention

    fn = {
        "quadratic": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
        "sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
        "flash": lambda q, k, v: flash_attention(q, k, v, False, block, block),
        "flash-causal": lambda q, k, v: flash_attention(q, k, v, True, block, block),
    }[method]
    gen = torch.Generator().manual_seed(0)
    q, k, v, g = (torch.randn(1, 1, T, d, generator=gen).to(device) for _ in range(4))
    leaves = [t.requires_grad_() for t in (q, k, v)]
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def run(n=T):
        for t in leaves:
            t.grad = None
        out = fn(*(t[..., :n, :] for t in leaves))
        out.backward(g[..., :n, :])
        del out

    run(min(T, 256))  # warm-up: thread pools, kernels and allocator caches, not counted
    sync()
    for t in leaves:
        t.grad = None
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        run()
        sync()
        peak, how = torch.cuda.max_memory_allocated() - before, "cuda allocator"
    elif _reset_peak() and _rss_kib("VmRSS") is not None:
        before = _rss_kib("VmRSS")
        run()
        peak, how = (_rss_kib("VmHWM") - before) * 1024, "RSS high-water mark"
    else:
        import resource

        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        run()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        scale = 1 if sys.platform == "darwin" else 1024
        peak, how = (after - before) * scale, "ru_maxrss growth (lower bound)"
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
        if sum(times) > 5:
            break
    return {"method": method, "T": T, "peak_bytes": max(int(peak), 0), "seconds": min(times),
            "how": how}  # fmt: skip


def run_one(args, method: str, T: int) -> dict:
    cmd = [sys.executable, __file__, "--one", method, "--T", str(T), "--d", str(args.d),
           "--block", str(args.block), "--device", args.device, "--repeats", str(args.repeats),
           "--threads", str(args.threads)]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"method": method, "T": T, "error": f"over {args.timeout:g} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["killed (out of memory?)"])[-1]
        return {"method": method, "T": T, "error": last[:60]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cell(r: dict, key: str, scale: float, fmt: str) -> str:
    return "—" if "error" in r else format(r[key] * scale, fmt)


def _ratio(a: dict, b: dict, key: str) -> str:
    if "error" in a or "error" in b or not b[key]:
        return "—"
    return f"{a[key] / b[key]:.3g}x"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--d", type=int, default=64, help="query/key/value width (one head)")
    p.add_argument("--block", type=int, default=128, help="block_q = block_k of flash")
    p.add_argument("--repeats", type=int, default=2, help="timed calls after the first")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per measurement")
    p.add_argument("--json", default="", help="also write every measurement to this file")
    p.add_argument("--one", default="", help=argparse.SUPPRESS)
    p.add_argument("--T", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.one:  # a child process: one measurement, one JSON line
        print(json.dumps(measure(args.one, args.T, args.d, args.block, args.device,
                                 args.repeats, args.threads)))  # fmt: skip
        return 0

    import torch

    methods = [m for m in args.methods.split(",") if m]
    lengths = [int(t) for t in args.lengths.split(",") if t]
    unknown = set(methods) - set(METHODS)
    if unknown:
        p.error(f"unknown methods {sorted(unknown)}; choose from {', '.join(METHODS)}")
    print(f"FlashAttention benchmark, forward + backward: B = 1, H = 1, d = {args.d}, float32, "
          f"blocks {args.block} x {args.block}, device = {args.device}")  # fmt: skip
    threads = args.threads or torch.get_num_threads()
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, torch threads {threads}; "
          "each figure from its own process")  # fmt: skip
    for m in methods:
        print(f"  {m:<13} {ABOUT[m]}", flush=True)
    results = {}
    for T in lengths:
        for m in methods:
            results[m, T] = run_one(args, m, T)
    how = {r["how"] for r in results.values() if "how" in r}
    base = "quadratic" if "quadratic" in methods else methods[0]
    for title, key, scale, fmt in (
        (f"Peak extra memory, MiB ({', '.join(sorted(how)) or 'n/a'})", "peak_bytes", 2**-20,
         ".1f"),
        ("Wall time of forward + backward, ms (fastest call after the first)", "seconds", 1e3,
         ".0f"),
    ):  # fmt: skip
        print(f"\n{title}")
        others = [m for m in methods if m != base]
        head = f"{'T':>7}" + "".join(f"{m:>14}" for m in methods)
        head += "".join(f"{base + '/' + m:>24}" for m in others)
        print(head)
        for T in lengths:
            row = f"{T:>7}" + "".join(
                f"{_cell(results[m, T], key, scale, fmt):>14}" for m in methods
            )
            row += "".join(f"{_ratio(results[base, T], results[m, T], key):>24}" for m in others)
            print(row)
    errors = [r for r in results.values() if "error" in r]
    for r in errors:
        print(f"  {r['method']} at T = {r['T']}: {r['error']}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(list(results.values()), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
