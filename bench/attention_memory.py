"""Peak memory and wall time of attention implementations as T grows, side by side.

    make bench                       # CPU, T = 1k .. 16k, B = 1, H = 1, d = 64
    python bench/attention_memory.py --device cuda --lengths 1024,4096

Each (method, T) is measured in a fresh Python process, so one measurement's memory can never
hide or inflate another's. What is measured, and how:

- peak memory: the largest *extra* memory the call needed on top of its inputs.
  CPU: the process's resident set size (RSS). Just before the call, the kernel's RSS high-water
  mark is reset (writing 5 to /proc/self/clear_refs, Linux); after it, VmHWM - VmRSS(before)
  is the peak. RSS sees every allocation that was touched, inside fused kernels too, which a
  Python-level tensor count (tracemalloc sees none of torch's memory; a TorchDispatchMode sees
  op outputs but not kernels' workspaces) would miss. Elsewhere than Linux: the growth of
  getrusage's ru_maxrss, which cannot go below the peak of the import, so small figures are
  then lower bounds. CUDA: torch.cuda.max_memory_allocated after reset_peak_memory_stats.
- time: the fastest of a few calls after the first full-length one (which pays for page
  faults and allocator growth), under torch.no_grad(). On a shared machine it is noisy.

Nothing here is graded and no test depends on these figures; the grader checks memory
deterministically (autograder/checks/efficient/), never by timing.
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
METHODS = ("quadratic", "sdpa", "chunked", "linear", "linear-causal")
ABOUT = {
    "quadratic": "solutions.attention.scaled_dot_product_attention (builds the (T, T) weights)",
    "sdpa": "torch.nn.functional.scaled_dot_product_attention (PyTorch's fused kernel)",
    "chunked": "solutions.efficient.chunked_attention (exact, online softmax over key chunks)",
    "linear": "solutions.efficient.linear_attention(causal=False) (elu + 1 kernel)",
    "linear-causal": "solutions.efficient.linear_attention(causal=True) (prefix sums)",
}


# --------------------------------------------------------------------------- one measurement


def _rss_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def measure(method, T, d, chunk_size, device, repeats, threads=0) -> dict:
    import resource

    import torch

    if threads:
        torch.set_num_threads(threads)
    import torch.nn.functional as F

    sys.path.insert(0, str(ROOT))
    from solutions.attention import scaled_dot_product_attention
    from solutions.efficient import chunked_attention, linear_attention

    run = {
        "quadratic": lambda q, k, v: scaled_dot_product_attention(q, k, v),
        "sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
        "chunked": lambda q, k, v: chunked_attention(q, k, v, chunk_size=chunk_size),
        "linear": lambda q, k, v: linear_attention(q, k, v),
        "linear-causal": lambda q, k, v: linear_attention(q, k, v, causal=True),
    }[method]
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, T, d, generator=gen).to(device) for _ in range(3))
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    with torch.no_grad():
        # Warm up on a short sequence: thread pools, lazy kernel set-up and allocator caches
        # are then in place before the peak is reset, and are not counted as this T's memory.
        small = min(T, 256)
        run(q[..., :small, :], k[..., :small, :], v[..., :small, :])
        sync()
        if device.startswith("cuda"):
            sync()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            run(q, k, v)
            sync()
            peak, how = torch.cuda.max_memory_allocated() - before, "cuda allocator"
        elif _reset_peak() and _rss_kib("VmRSS") is not None:
            before = _rss_kib("VmRSS")
            run(q, k, v)
            peak, how = (_rss_kib("VmHWM") - before) * 1024, "RSS high-water mark"
        else:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            run(q, k, v)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
            peak, how = (after - before) * scale, "ru_maxrss growth (lower bound)"
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run(q, k, v)
            sync()
            times.append(time.perf_counter() - start)
            if sum(times) > 3:  # enough for a slow configuration
                break
    return {
        "method": method,
        "T": T,
        "peak_bytes": max(int(peak), 0),
        "seconds": min(times),
        "how": how,
    }


# --------------------------------------------------------------------------- the driver


def run_one(args, method: str, T: int) -> dict:
    cmd = [sys.executable, __file__, "--one", method, "--T", str(T), "--d", str(args.d),
           "--chunk-size", str(args.chunk_size), "--device", args.device,
           "--repeats", str(args.repeats), "--threads", str(args.threads)]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"method": method, "T": T, "error": f"over {args.timeout:g} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["killed (out of memory?)"])[-1]
        return {"method": method, "T": T, "error": last[:60]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mib(r: dict) -> str:
    return "—" if "error" in r else f"{r['peak_bytes'] / 2**20:.1f}"


def _ms(r: dict) -> str:
    return "—" if "error" in r else f"{r['seconds'] * 1e3:.1f}"


def _ratio(a: dict, b: dict, key: str) -> str:
    if "error" in a or "error" in b or not b[key]:
        return "—"
    return f"{a[key] / b[key]:.1f}x"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--d", type=int, default=64, help="query/key/value width (one head)")
    p.add_argument("--chunk-size", type=int, default=128)
    p.add_argument("--repeats", type=int, default=2, help="timed calls after the first")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    p.add_argument("--timeout", type=float, default=180, help="seconds per measurement")
    p.add_argument("--json", default="", help="also write every measurement to this file")
    p.add_argument("--one", default="", help=argparse.SUPPRESS)
    p.add_argument("--T", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.one:  # a child process: one measurement, one JSON line
        print(json.dumps(measure(args.one, args.T, args.d, args.chunk_size, args.device,
                                 args.repeats, args.threads)))  # fmt: skip
        return 0

    import torch

    methods = [m for m in args.methods.split(",") if m]
    lengths = [int(t) for t in args.lengths.split(",") if t]
    unknown = set(methods) - set(METHODS)
    if unknown:
        p.error(f"unknown methods {sorted(unknown)}; choose from {', '.join(METHODS)}")
    print(f"Attention memory/time benchmark: B = 1, H = 1, d = {args.d}, float32, "
          f"chunk_size = {args.chunk_size}, device = {args.device}")  # fmt: skip
    threads = args.threads or torch.get_num_threads()
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, torch threads {threads}; "
          "each figure from its own process")  # fmt: skip
    for m in methods:
        print(f"  {m:<14} {ABOUT[m]}", flush=True)
    results = {}
    for T in lengths:
        for m in methods:
            results[m, T] = run_one(args, m, T)
    how = {r["how"] for r in results.values() if "how" in r}
    print(f"\nPeak extra memory, MiB ({', '.join(sorted(how)) or 'n/a'})")
    head = f"{'T':>7}" + "".join(f"{m:>15}" for m in methods)
    both = "quadratic" in methods and "chunked" in methods
    print(head + (f"{'quad/chunked':>15}" if both else ""))
    for T in lengths:
        row = f"{T:>7}" + "".join(f"{_mib(results[m, T]):>15}" for m in methods)
        if both:
            row += f"{_ratio(results['quadratic', T], results['chunked', T], 'peak_bytes'):>15}"
        print(row)
    print("\nWall time, ms (fastest of the timed calls)")
    print(head + (f"{'chunked/quad':>15}" if both else ""))
    for T in lengths:
        row = f"{T:>7}" + "".join(f"{_ms(results[m, T]):>15}" for m in methods)
        if both:
            row += f"{_ratio(results['chunked', T], results['quadratic', T], 'seconds'):>15}"
        print(row)
    errors = [r for r in results.values() if "error" in r]
    for r in errors:
        print(f"  — {r['method']} at T = {r['T']}: {r['error']}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(list(results.values()), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
