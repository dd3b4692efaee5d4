"""Public reference outputs: probe(solution) on the public seed, stored per module.

autograder/fixtures/<module>.npz holds the arrays (loaded with allow_pickle=False: nothing is
unpickled); <module>.json is the manifest: torch and numpy versions, the seed, the sha256 of
the solution and of the probe side of its checks (inputs and probes: what the outputs depend
on; verdicts, titles and points are not, so changing them needs no regeneration), and of every
array. `make fixtures` rewrites only the modules whose sources changed. A kit test recomputes
them and compares with the tolerance table, never bit for bit: another CPU may round the last
float32 bit differently.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import time
from pathlib import Path

import numpy as np
import torch

from ..run.probing import make_inputs, one_torch_thread, run_probe
from ..run.submission import Submission
from . import paths, registry
from .check import Outputs

FIXTURE_DIR = paths.FIXTURES
SOLUTIONS = paths.SOLUTIONS
PUBLIC_SEED = 20261129


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


TRUSTED = Path(__file__).resolve().parents[1] / "trusted"


def source_hashes(module: str, solutions: Path = SOLUTIONS) -> dict[str, str]:
    """What the stored outputs come from: the solution and the probe side; the whole checks
    package where a check keeps its judge's replays with the reference (core.Check.replays);
    and the trusted stand-ins, which the solution's imports get while the outputs are made."""
    replays = any(c.replays for c in registry.checks_of(module))
    probe_side = (not replays and registry.probe_files_of(module)) or registry.files_of(module)
    probe_side = [*probe_side, *sorted(TRUSTED.glob("*.py"))]
    checks_text = b"".join(f.read_bytes() for f in probe_side)
    return {
        "solution_sha256": sha256((solutions / f"{module}.py").read_bytes()),
        "checks_sha256": sha256(checks_text),
    }


def compute(module: str, solutions: Path = SOLUTIONS, seed: int = PUBLIC_SEED) -> dict:
    """{check slug: probe(solution, inputs(seed))}: the reference outputs."""
    return compute_timed(module, solutions, seed)[0]


def compute_timed(
    module: str,
    solutions: Path = SOLUTIONS,
    seed: int = PUBLIC_SEED,
    loaded: Submission | None = None,
    only: set[str] | None = None,
) -> tuple[dict[str, Outputs], dict[str, float]]:
    """The reference outputs, and the CPU seconds the solution's probe took per check (what
    time limits are calibrated against: limits.py). `loaded`: `solutions` already loaded
    (a process that computes many seeds' references imports each solution once). `only`:
    the slugs to compute (default: every fast check)."""
    refs: dict[str, Outputs] = {}
    cpu: dict[str, float] = {}
    if only is not None and not only:
        return refs, cpu  # (nothing to compute: the solution is not even imported)
    mod = (loaded or Submission(solutions)).load(module)
    for c in registry.checks_of(module):
        if c.slow:  # judged against thresholds, no stored reference (core.Check.slow)
            continue
        if only is not None and c.slug not in only:
            continue
        inputs = make_inputs(c, seed)
        # On one torch thread, as every placement runs the student's probes: with torch's
        # pool of a thread per core, a busy machine's spinning threads counted too (`make
        # fixtures` beside a test run wrote 2.7 CPU-s for a 0.23 CPU-s check).
        with one_torch_thread():
            start = time.process_time()
            refs[c.slug] = run_probe(c, mod, inputs)
            cpu[c.slug] = round(time.process_time() - start, 4)
        if c.replays is not None:  # the judge's models on these inputs (trusted side only)
            replayed = c.replays(inputs)
            refs[c.slug] = {**refs[c.slug], **{f"replay/{k}": v for k, v in replayed.items()}}
    return refs, cpu


def estimated_cpu(module: str, measured: dict[str, float], slugs: set[str]) -> dict[str, float]:
    """CPU seconds of `module`'s checks `slugs`, not run here (the hidden tier's reference
    servers skip the checks whose verdicts read no reference): the public fixtures' figures,
    scaled by how much slower this machine ran the checks it did run (`measured`) than the
    machine that wrote the fixtures, never scaled down. {} without a manifest (the time
    limits' floors then apply: limits.TimeLimits.cpu_limit)."""
    try:
        stored = manifest(module).get("cpu_seconds", {})
    except (OSError, ValueError):
        return {}
    here = sum(measured.values())
    there = sum(stored.get(slug, 0.0) for slug in measured)
    factor = max(1.0, here / there) if there > 0 else 1.0
    return {s: round(float(stored[s]) * factor, 4) for s in sorted(slugs) if s in stored}


def _encode(value) -> tuple[np.ndarray, str]:
    if type(value) is torch.Tensor:
        return value.numpy(), "tensor"
    for kind in (bool, int, float, str):
        if type(value) is kind:
            return np.asarray(value), kind.__name__
    raise TypeError(f"a probe output must be a tensor, bool, int, float or str, got {value!r}")


def _decode(array: np.ndarray, kind: str):
    if kind == "tensor":
        return torch.from_numpy(np.array(array))
    return {"bool": bool, "int": int, "float": float, "str": str}[kind](array.item())


def is_fresh(module: str, solutions: Path = SOLUTIONS) -> bool:
    """Whether the stored fixtures were made from today's sources (by their hashes)."""
    try:
        meta = manifest(module)
    except (OSError, ValueError):
        return False
    wanted = {"seed": PUBLIC_SEED, **source_hashes(module, solutions)}
    return all(meta.get(k) == v for k, v in wanted.items())


def write(module: str, solutions: Path = SOLUTIONS) -> Path:
    refs, cpu = compute_timed(module, solutions)
    arrays, kinds = {}, {}
    for slug, outputs in refs.items():
        for key, value in outputs.items():
            arrays[f"{slug}/{key}"], kinds[f"{slug}/{key}"] = _encode(value)
    buf = io.BytesIO()
    np.savez_compressed(buf, allow_pickle=False, **arrays)
    FIXTURE_DIR.mkdir(exist_ok=True)
    npz = FIXTURE_DIR / f"{module}.npz"
    npz.write_bytes(buf.getvalue())
    manifest = {
        "module": module,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "seed": PUBLIC_SEED,
        **source_hashes(module, solutions),
        "npz_sha256": sha256(buf.getvalue()),
        # CPU seconds of the solution's probes on the machine that wrote the fixtures: the
        # public tier's time limits are calibrated against them (limits.py).
        "cpu_seconds": cpu,
        "arrays": {
            k: {"kind": kinds[k], "sha256": sha256(np.ascontiguousarray(a).tobytes())}
            for k, a in arrays.items()
        },
    }
    (FIXTURE_DIR / f"{module}.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return npz


def manifest(module: str) -> dict:
    return json.loads((FIXTURE_DIR / f"{module}.json").read_text())


def load(module: str) -> dict[str, Outputs]:
    """The stored reference outputs of `module`, checked against the manifest."""
    npz = FIXTURE_DIR / f"{module}.npz"
    if not npz.is_file():
        raise FileNotFoundError(
            f"no reference outputs for {module!r} ({npz} is missing); "
            "instructors: run `make fixtures`"
        )
    meta = manifest(module)
    data = npz.read_bytes()
    if sha256(data) != meta["npz_sha256"]:
        raise ValueError(f"{npz} does not match its manifest: run `make fixtures`")
    # Each grading gets tensors of its own (a verdict may change what it is given in place).
    return {
        slug: {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in outputs.items()}
        for slug, outputs in _decoded(data, json.dumps(meta["arrays"])).items()
    }


@functools.lru_cache(maxsize=64)
def _decoded(data: bytes, kinds: str) -> dict[str, Outputs]:
    """The arrays of one .npz file (by its bytes), decoded once per process: every
    grading in a process (the warm grader's forks, which it loads them for, and the recording
    of `make dist`, hundreds) reads the same public fixtures; parsing an .npz's array headers
    was 12 ms a module."""
    wanted = json.loads(kinds)
    refs: dict[str, Outputs] = {}
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        for key in arrays.files:
            slug, name = key.split("/", 1)
            refs.setdefault(slug, {})[name] = _decode(arrays[key], wanted[key]["kind"])
    return refs
