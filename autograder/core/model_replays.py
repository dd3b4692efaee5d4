"""What the judges' models gave on the public tier: how the student copy names mistakes.

A judge's model (a function marked `@model`, verdicts.py) computes an exercise, correctly or
with a named mistake; a verdict compares the student's output with it to name the mistake.
The student copy (`make dist`) ships no model's body: it would be a working implementation
of the exercise. On the public tier the inputs are fixed, so `make dist` grades, on the
trusted side (the instructor's kit), the solution, every alternative and every mutant of
each module with every model call recorded: which model, on which arguments (a fingerprint),
and what it returned. The copy ships those answers as autograder/fixtures/<module>.models.*;
there a left-out model answers a call it finds (same model, arguments equal within a
tolerance, so another CPU's last-bit rounding still finds it) and is unavailable otherwise.

What ships reveals nothing beyond the public fixtures: the correct model's answers are the
public reference outputs, and the others are the outputs of named wrong computations on the
public inputs. Official grading (hidden tier) never reads these files.

Only the outermost model call is recorded (a model calling another is one answer): the copy
calls models only from verdicts, since no model body ships there.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import paths
from .check import Misconception
from .settings import HINT_STATE_VAR

SUFFIX = ".models"
# Beside the cached answers (never shipped): what each variant lost while they were recorded,
# the instructor's side of tools/student_copy_check.py.
GRADED = ".graded.json"
# Two fingerprints of a tensor match when each projection differs by at most RTOL times the
# tensor's L1 norm: float32 inputs drawn or computed on another CPU differ in the last bits
# (about 1e-7 relative), a different tensor of the same shape by far more.
RTOL = 1e-4
FORMAT = 1


class Unkeyable(Exception):
    """An argument the fingerprint cannot describe (a module, a generator, a closure)."""


class Unstorable(Exception):
    """A model's answer that cannot be stored as plain arrays (an nn.Module, a closure)."""


# --------------------------------------------------------------------------- fingerprints


def _weights(n: int, multiplier: int) -> torch.Tensor:
    """A fixed pseudo-random vector in [-0.5, 0.5), from integer arithmetic only (the same
    on every machine)."""
    i = torch.arange(n, dtype=torch.int64)
    return ((i * multiplier + 12345) % 2**31).to(torch.float64) / 2**31 - 0.5


def _tensor_key(t: torch.Tensor, sig: list[str], proj: list[list[float]]) -> None:
    t = t.detach().cpu()
    sig.append(f"T{str(t.dtype).removeprefix('torch.')}{tuple(t.shape)}")
    if t.is_complex():
        t = torch.view_as_real(t)
    if not t.is_floating_point():  # bool and integers: exact on every machine
        data = t.contiguous().numpy().tobytes()
        sig.append(hashlib.sha256(data).hexdigest()[:16])
        return
    flat = t.to(torch.float64).flatten()
    finite = torch.isfinite(flat)
    sig.append(
        f"nan{int(flat.isnan().sum())}+{int((flat == math.inf).sum())}"
        f"-{int((flat == -math.inf).sum())}"
    )
    flat = torch.where(finite, flat, torch.zeros_like(flat))
    n = flat.numel()
    # the L1 norm first: the scale the others are judged against (_matches)
    group = [float(flat.abs().sum()), float(flat.sum())]
    group += [float(flat @ _weights(n, m)) for m in (2654435761, 40503, 2246822519)]
    proj.append(group)


def _key(value: Any, sig: list[str], proj: list[list[float]]) -> None:
    if isinstance(value, torch.Tensor):
        _tensor_key(value, sig, proj)
    elif value is None or isinstance(value, (bool, int, str, torch.dtype, torch.device)):
        sig.append(f"{type(value).__name__}:{value!r}")
    elif isinstance(value, float):
        sig.append("f" if math.isfinite(value) else f"f{value!r}")
        if math.isfinite(value):
            proj.append([abs(value), value])
    elif isinstance(value, range):
        sig.append(repr(value))
    elif isinstance(value, (tuple, list, torch.Size)):
        sig.append(f"{type(value).__name__}[{len(value)}")
        for v in value:
            _key(v, sig, proj)
        sig.append("]")
    elif isinstance(value, dict):
        keys = sorted(value, key=repr)
        sig.append(f"dict[{[k for k in keys]!r}")
        for k in keys:
            _key(value[k], sig, proj)
        sig.append("]")
    elif isinstance(value, Misconception):
        sig.append(f"misconception:{value.id}")
    elif isinstance(value, torch.nn.Module):  # its class, configuration and weights
        sig.append(f"module:{type(value).__qualname__}({value.extra_repr()}){value.training}")
        _key(dict(value.state_dict()), sig, proj)
    elif isinstance(value, types.FunctionType) and value.__name__ == "<lambda>":
        # a judge's lambda (blocks' activations): its code, constants and closed-over values
        sig.append(f"lambda:{_code_key(value.__code__)}")
        _key(list(value.__defaults__ or ()), sig, proj)
        _key([c.cell_contents for c in value.__closure__ or ()], sig, proj)
    elif callable(value) and getattr(value, "__qualname__", "<").find("<") < 0:
        # a named function (torch.log, F.gelu): its name; never a closure
        sig.append(f"fn:{getattr(value, '__module__', '')}.{value.__qualname__}")
    elif _is_holder(value):  # a judge's plain data holder: its class and attributes
        sig.append(f"object:{type(value).__qualname__}")
        _key(dict(vars(value)), sig, proj)
    else:
        raise Unkeyable(type(value).__name__)


def _code_key(code: types.CodeType) -> str:
    """A code object by what it does (bytecode, constants, names), never by where it is."""
    consts = [_code_key(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    text = repr((code.co_code, consts, code.co_names, code.co_varnames))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint(args: tuple, kwargs: dict) -> tuple[str, list[list[float]]]:
    """(the exact part, the projections: a group per float and per floating tensor, its
    scale first) of a call's arguments; raises Unkeyable."""
    sig: list[str] = []
    proj: list[list[float]] = []
    _key((tuple(args), dict(kwargs)), sig, proj)
    return "|".join(sig), proj


def _matches(proj: list[list[float]], stored: list[list[float]]) -> bool:
    """Each group within RTOL of its own scale (a tensor's L1 norm, a float's absolute
    value): a float argument is never judged against a large tensor's scale."""
    if len(proj) != len(stored):
        return False
    for got, want in zip(proj, stored, strict=True):
        if len(got) != len(want):
            return False
        scale = max(abs(want[0]), abs(got[0]))
        if any(abs(a - b) > RTOL * scale + 1e-12 for a, b in zip(got, want, strict=True)):
            return False
    return True


# --------------------------------------------------------------------------- answers


def _encode(value: Any, arrays: dict[str, np.ndarray], first: int = 0) -> Any:
    """A JSON description of `value`, its tensors added to `arrays` as a<first>, a<first+1>..."""
    if isinstance(value, torch.Tensor):
        name = f"a{first + len(arrays)}"
        t = value.detach().cpu()
        if t.dtype == torch.bfloat16:
            arrays[name] = t.float().numpy().copy()
            return {"tensor": name, "dtype": "bfloat16"}
        arrays[name] = t.numpy().copy()
        return {"tensor": name}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if isinstance(value, (tuple, list, torch.Size)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [_encode(v, arrays, first) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: _encode(v, arrays, first) for k, v in value.items()}}
    if _is_holder(value):  # a judge's plain data holder: its attributes, read back by name
        return {"object": {k: _encode(v, arrays, first) for k, v in vars(value).items()}}
    raise Unstorable(type(value).__name__)


def _decode(spec: dict, arrays: Any) -> Any:
    if "tensor" in spec:
        t = torch.from_numpy(np.array(arrays[spec["tensor"]]))
        return t.to(torch.bfloat16) if spec.get("dtype") == "bfloat16" else t
    if "value" in spec:
        return spec["value"]
    if "list" in spec:
        return [_decode(s, arrays) for s in spec["list"]]
    if "tuple" in spec:
        return tuple(_decode(s, arrays) for s in spec["tuple"])
    if "object" in spec:
        return types.SimpleNamespace(**{k: _decode(s, arrays) for k, s in spec["object"].items()})
    return {k: _decode(s, arrays) for k, s in spec["dict"].items()}


def module_of(fn: Callable) -> str:
    """The exercise module whose judge declares model `fn` ('' outside autograder.checks)."""
    parts = getattr(fn, "__module__", "").split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["autograder", "checks"] else ""


def model_name(fn: Callable) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


class Recorder:
    """Collects the answers of outermost model calls, per exercise module."""

    def __init__(self) -> None:
        self.entries: dict[str, list[dict]] = {}
        self.arrays: dict[str, dict[str, np.ndarray]] = {}
        self.seen: dict[str, set] = {}
        self.skipped: dict[str, int] = {}
        self.depth = 0

    def add(self, fn: Callable, key: tuple | str, value: Any, after: dict[str, Any]) -> None:
        """Record `value` for the call fingerprinted as `key` ((sig, proj), or why it has no
        fingerprint), with `after`: the arguments (by position or name) that are judge data
        holders, as the call left them (kvcache's _Cache, filled in place)."""
        module, name = module_of(fn), model_name(fn)
        if not module:
            return
        try:
            if isinstance(key, str):
                raise Unkeyable(key)
            sig, proj = key
            arrays = self.arrays.setdefault(module, {})
            rounded = (name, sig, tuple(f"{p:.5g}" for group in proj for p in group))
            if rounded in self.seen.setdefault(module, set()):
                return
            added: dict[str, np.ndarray] = {}
            spec = _encode(value, added, first=len(arrays))
            if after:
                mutated = {k: _encode(v, added, first=len(arrays)) for k, v in after.items()}
                spec = {"result": spec, "after": mutated}
        except (Unkeyable, Unstorable) as e:
            self.skipped[f"{name} ({e})"] = self.skipped.get(f"{name} ({e})", 0) + 1
            return
        arrays.update(added)
        self.seen[module].add(rounded)
        self.entries.setdefault(module, []).append(
            {"model": name, "sig": sig, "proj": proj, "answer": spec}
        )

    def write(self, folder: Path, sources: dict[str, str]) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for module in sorted(self.entries):
            buf = io.BytesIO()
            np.savez_compressed(buf, allow_pickle=False, **self.arrays.get(module, {}))
            (folder / f"{module}{SUFFIX}.npz").write_bytes(buf.getvalue())
            meta = {
                "format": FORMAT,
                "module": module,
                "torch": torch.__version__,
                "sources_sha256": sources.get(module, ""),
                "npz_sha256": hashlib.sha256(buf.getvalue()).hexdigest(),
                # calls not recorded: their model is unavailable in the copy (kind: count)
                "skipped": {
                    k: n for k, n in sorted(self.skipped.items()) if f".checks.{module}." in k
                },
                "calls": self.entries[module],
            }
            path = folder / f"{module}{SUFFIX}.json"
            path.write_text(json.dumps(meta) + "\n")
            written += [path, folder / f"{module}{SUFFIX}.npz"]
        return written


_recorder: Recorder | None = None


def recorded(fn: Callable) -> Callable:
    """`fn`, recording its answers while a Recorder is active (verdicts.model)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        rec = _recorder
        if rec is None or rec.depth:
            return fn(*args, **kwargs)
        try:  # before the call: a model may fill an argument in place
            key: tuple | str = fingerprint(args, kwargs)
        except Unkeyable as e:
            key = str(e)
        try:
            rec.depth += 1
            value = fn(*args, **kwargs)
        finally:
            rec.depth -= 1
        rec.add(fn, key, value, _holders(args, kwargs))
        return value

    return functools.update_wrapper(call, fn)  # its name, module, docstring; __wrapped__


def _is_holder(value: Any) -> bool:
    """A judge's plain data holder (kvcache's _Cache): a model may fill it in place."""
    module = type(value).__module__
    return (
        module.startswith("autograder.checks.")
        and hasattr(value, "__dict__")
        and not callable(value)
    )


def _holders(args: tuple, kwargs: dict) -> dict[str, Any]:
    """{position or name: the holder's attributes}: what the call left in its holders."""
    found = {str(i): a for i, a in enumerate(args) if _is_holder(a)}
    found.update({k: a for k, a in kwargs.items() if _is_holder(a)})
    return {k: dict(vars(a)) for k, a in found.items()}


@contextmanager
def recording() -> Iterator[Recorder]:
    global _recorder
    previous, _recorder = _recorder, Recorder()
    try:
        yield _recorder
    finally:
        _recorder = previous


# --------------------------------------------------------------------------- the copy's side

_loaded: dict[str, tuple[dict[str, list[dict]], Any]] = {}
_sealed = False


def seal() -> None:
    """No answer from here on: called where student code is about to run (the forked
    worker), so a student module that imports a judge's model gets nothing from it. (Any
    code in the copy can read the public fixtures; the seal keeps the copy's grade from
    rewarding a re-export of the judge.)"""
    global _sealed
    _sealed = True
    _loaded.clear()


def _answers(module: str) -> tuple[dict[str, list[dict]], Any]:
    if module not in _loaded:
        by_model: dict[str, list[dict]] = {}
        arrays: Any = {}
        meta_path = paths.FIXTURES / f"{module}{SUFFIX}.json"
        npz_path = paths.FIXTURES / f"{module}{SUFFIX}.npz"
        try:
            meta = json.loads(meta_path.read_text())
            data = npz_path.read_bytes()
            if meta.get("format") == FORMAT and (
                hashlib.sha256(data).hexdigest() == meta.get("npz_sha256")
            ):
                with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                    arrays = {k: npz[k] for k in npz.files}
                for call in meta["calls"]:
                    by_model.setdefault(call["model"], []).append(call)
        except (OSError, ValueError, KeyError):
            pass  # no answers: every left-out model is unavailable
        _loaded[module] = (by_model, arrays)
    return _loaded[module]


def answer(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """What model `fn` gave on these arguments when the kit recorded it; KeyError if it
    never saw them."""
    if _sealed:
        raise KeyError(model_name(fn))
    module = module_of(fn)
    by_model, arrays = _answers(module)
    calls = by_model.get(model_name(fn), [])
    if not calls:
        raise KeyError(model_name(fn))
    try:
        sig, proj = fingerprint(args, kwargs)
    except Unkeyable:
        raise KeyError(model_name(fn)) from None
    for call in calls:
        if call["sig"] == sig and _matches(proj, call["proj"]):
            spec = call["answer"]
            if "after" not in spec:
                return _decode(spec, arrays)
            for k, state in spec["after"].items():  # fill the holders as the model did
                holder = args[int(k)] if k.isdigit() else kwargs[k]
                for attr, v in _decode(state, arrays).items():
                    setattr(holder, attr, v)
            return _decode(spec["result"], arrays)
    raise KeyError(model_name(fn))


# --------------------------------------------------------------------------- recording


def header(path: Path, key: str) -> str | None:
    """The value of a variant file's `# <key>:` line (a mutant's `# expects:` or `# loses:`),
    or None where it has none."""
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def variants(module: str, root: Path = paths.ROOT) -> dict[str, Path | None]:
    """{name: the module file} of the solution (None), every alternative and every mutant
    of `module` in the kit's tests (what the recording grades)."""
    found: dict[str, Path | None] = {"solution": None}
    for kind in ("alternatives", "mutants"):
        for p in sorted((root / "tests" / "kit" / kind / module).glob("*.py")):
            found[f"{kind[:-1]} {p.stem}"] = p
    return found


def sources_sha256(module: str, root: Path = paths.ROOT) -> str:
    """What a module's recorded answers (and grades) depend on: its judge package, the
    engine (every file of autograder/ but the other modules' judge packages), the solutions,
    its variants, the public fixtures, the trusted stand-ins and torch's version."""
    h = hashlib.sha256(f"{FORMAT} {torch.__version__}".encode())
    package, checks = root / "autograder", root / "autograder" / "checks"
    files = sorted((checks / module).rglob("*.py"))
    files += sorted(
        p for p in package.rglob("*.py") if p.parent == checks or not p.is_relative_to(checks)
    )
    files += sorted((root / "solutions").glob("*.py"))
    files += [p for p in variants(module, root).values() if p is not None]
    files += [root / "autograder" / "fixtures" / f"{module}.npz"]
    for f in files:
        if f.is_file():
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


_RECORD = r"""
import dataclasses, json, shutil, sys, tempfile, warnings
from autograder.run.forkserver import quiet_start
quiet_start()  # rare full collections while the kit imports
from pathlib import Path
warnings.filterwarnings("ignore")
from autograder.core import model_replays
from autograder.run.engine import grade
from autograder.run.submission import Submission
modules, out, sources = json.loads(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
solutions = Path("solutions").resolve()
graded, shown = {}, {}
with model_replays.recording() as rec:
    for module in modules:
        found = graded.setdefault(module, {})
        kept = shown.setdefault(module, {})
        for name, path in model_replays.variants(module).items():
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp) / "submission"
                shutil.copytree(solutions, folder, ignore=shutil.ignore_patterns("__pycache__"))
                if path is not None:
                    shutil.copyfile(path, folder / f"{module}.py")
                results = grade(Submission(folder), [module])
            found[name] = sorted(
                [r.check_id.split(".", 1)[1], r.misconception or ""]
                for r in results if not r.passed
            )
            kept[name] = [dataclasses.asdict(r) for r in results if not r.passed]
rec.write(out, sources)
for module, found in graded.items():
    meta = {"sources_sha256": sources[module], "graded": found, "results": shown[module]}
    text = json.dumps(meta, indent=1, default=str)  # ASCII: read back under any locale
    (out / f"{module}{model_replays.GRADED}").write_text(text + "\n")
print("SKIPPED " + json.dumps(rec.skipped))
"""


def compute(
    modules: list[str], cache: Path, root: Path = paths.ROOT, record: set[str] | None = None
) -> dict[str, list[Path]]:
    """{module: its answer files}, recorded by grading every variant of the modules whose
    cached answers (under `cache`) are missing or stale; in a separate process with the kit
    on its path, as the student copy check grades. `record`: only these modules may be
    recorded now; a module left stale ships no answers (never another version's)."""
    sources = {m: sources_sha256(m, root) for m in modules}

    def fresh(module: str) -> bool:  # every recorded module has its graded file
        try:
            meta = json.loads((cache / f"{module}{GRADED}").read_text())
        except (OSError, ValueError):
            return False
        return meta.get("sources_sha256") == sources[module]

    # One recording at a time per cache (two `make dist` at once, or test processes side by
    # side): the second waits, then finds the first one's answers fresh.
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            todo = [m for m in modules if not fresh(m) and (record is None or m in record)]
            _record(todo, cache, root, sources)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return {
        m: [p for p in (cache / f"{m}{SUFFIX}.json", cache / f"{m}{SUFFIX}.npz") if p.is_file()]
        for m in modules
        if fresh(m)
    }


def _record(todo: list[str], cache: Path, root: Path, sources: dict[str, str]) -> None:
    """Grade every variant of the modules `todo` with their models recorded (one process),
    and copy the answers and grades into `cache`."""
    if not todo:
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": str(root),
            "PYTHONDONTWRITEBYTECODE": "1",
            "LANGUAGE": "en",
            HINT_STATE_VAR: str(Path(tmp) / "hints.json"),  # read by the child's settings
        }
        proc = subprocess.run(
            [sys.executable, "-c", _RECORD, json.dumps(todo), tmp, json.dumps(sources)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            raise RuntimeError(
                "recording the judges' models failed:\n"
                + (proc.stdout[-2000:] + proc.stderr[-3000:])
            )
        cache.mkdir(parents=True, exist_ok=True)
        for module in todo:
            for name in (f"{module}{SUFFIX}.json", f"{module}{SUFFIX}.npz", module + GRADED):
                if (Path(tmp) / name).is_file():
                    shutil.copyfile(Path(tmp) / name, cache / name)
                else:  # a module whose verdicts called no model: nothing to ship
                    (cache / name).unlink(missing_ok=True)


def _grading_record(module: str, cache: Path, root: Path) -> dict[str, Any]:
    """The record of how the instructor's kit graded `module`'s variants while recording
    (compute), or {} when it is missing or stale."""
    try:
        meta = json.loads((cache / f"{module}{GRADED}").read_text())
    except (OSError, ValueError):
        return {}
    if meta.get("sources_sha256") != sources_sha256(module, root):
        return {}
    return meta


def recorded_grades(module: str, cache: Path, root: Path = paths.ROOT) -> dict[str, list] | None:
    """{variant: [[check slug, mistake id], ...] it lost} as the instructor's kit graded it
    while recording (compute), or None when that record is missing or stale."""
    return _grading_record(module, cache, root).get("graded")


def recorded_results(
    module: str, cache: Path, root: Path = paths.ROOT
) -> dict[str, list[dict[str, Any]]] | None:
    """{variant: [each Result it did not pass, as a dict]} from the same record as
    recorded_grades (what the kit's tests word again in another language), or None when that
    record is missing or stale."""
    found = _grading_record(module, cache, root).get("results")
    return found if isinstance(found, dict) else None
