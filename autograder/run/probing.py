"""The student side of a check: draw its inputs, import the module, run the probe.

This is the only engine code a process that runs student code needs (with core, the probe
side of the checks and the trusted stand-ins of the graded module's dependencies). It never
judges: `attempt` returns the probe's outputs, or the Result of a check that ended before a
verdict was possible (import error, not attempted, crash).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import re
import traceback
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from ..core.check import (
    CALL_REFUSED,
    CHANGED_KEY,
    CRASH,
    FIXED_RANK,
    IMPORT_ERROR,
    INVALID_PROBABILITIES,
    MISNAMED_FILE,
    MISSING_FILE,
    NOT_ATTEMPTED,
    OWN_RAISE,
    TENSOR_AS_BOOL,
    WEIGHTS_NOT_LOADED,
    WRONG_TYPE,
    Check,
    Failure,
    Inputs,
    Outputs,
    ProbeSpec,
    Result,
)
from ..core.syllabus import MODULES
from .limits import Board
from .submission import ImportProblem, Loadable, Submission, shown_names

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus.txt"
# Read when the probe side is first imported: the sandbox's zygote imports this module before
# any sandboxed process confines itself, and the sandbox's file view holds no data/ folder.
CORPUS_TEXT = CORPUS.read_text(encoding="utf-8") if CORPUS.is_file() else None


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread while it runs, then as before. Small tensors gain nothing from
    torch's intra-op pool (a thread per core), and on a loaded machine every small op waits
    for the others: diagnostics' tiny training runs (25 steps: 0.2 s on one thread, 8 s on
    two under load), the batch grader's verdicts beside the sandboxes (its CPU per student,
    17 modules: 1.3-2.7 s before, 0.2-0.4 s after; docs/batch.md)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def corpus() -> tuple[str, torch.Tensor]:
    """(the alphabet, the corpus encoded as int64 ids): the given CharVocab's encoding (the
    training checks of gpt and llama)."""
    text = CORPUS_TEXT if CORPUS_TEXT is not None else CORPUS.read_text(encoding="utf-8")
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    return "".join(chars), torch.tensor([index[c] for c in text], dtype=torch.int64)


Probed = Check | ProbeSpec


def randn(
    gen: torch.Generator, *shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0
) -> torch.Tensor:
    """Standard normal draws on the CPU from `gen` (deterministic), times `scale`."""
    return torch.randn(*shape, generator=gen, dtype=torch.float64).mul(scale).to(dtype)


def draw(gen: torch.Generator, low: int, high: int) -> int:
    """An int in [low, high], from the check's generator."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def qkv(
    gen: torch.Generator,
    shape: tuple[int, ...],
    d: int,
    d_v: int,
    dtype: torch.dtype = torch.float32,
    scale: float = 1.0,
) -> dict[str, torch.Tensor]:
    """Self-attention's q, k (`shape` + (d,), times `scale`) and v (`shape` + (d_v,))."""
    return {
        "q": randn(gen, *shape, d, dtype=dtype, scale=scale),
        "k": randn(gen, *shape, d, dtype=dtype, scale=scale),
        "v": randn(gen, *shape, d_v, dtype=dtype),
    }


def same_keys(gen: torch.Generator, x: Inputs, shift: float | None = None) -> Inputs:
    """x with a small run added (same_q, same_k, same_v): 4 keys that are all the same
    (shifted by `shift`, with the last feature of each query taken from x's q), so every
    score of a query is equal and attention gives each query the mean of the values,
    whatever the scale or the way chunks or tiles are combined; a run that computes nothing
    cannot give that."""
    batch, d, d_v = x["q"].shape[:-2], x["q"].size(-1), x["v"].size(-1)
    x["same_q"] = randn(gen, *batch, 4, d)
    x["same_k"] = randn(gen, *batch, 1, d).expand(*batch, 4, d).contiguous()
    if shift is not None:
        x["same_q"][..., -1] = x["q"][..., :4, -1]
        x["same_k"] = x["same_k"] + shift
    x["same_v"] = randn(gen, *batch, 4, d_v)
    return x


def shifted_keys(gen: torch.Generator) -> tuple[Inputs, torch.Tensor]:
    """(x, u): q, k, v (2, 2, T, 8) and the keys moved by u, k_up = k + u and k_down = k - u.
    Keys moved by u add q·u/√d to every score of a query: 100 to 300 here (exp overflows
    float32 above 88), or minus that (exp underflows to 0). Softmax cancels such a shift."""
    T, d = draw(gen, 10, 14), 8
    x = qkv(gen, (2, 2, T), d, 6)
    x["q"][..., -1] = torch.rand(2, 2, T, generator=gen) + 0.5
    u = torch.zeros(d)
    u[-1] = 200.0 * d**0.5
    x["k_up"], x["k_down"] = x["k"] + u, x["k"] - u
    return x, u


def logits_of(model: Any, x: Inputs) -> Outputs:
    """A language model's logits on x["idx"], and on x["idx2"] when x has one (a second call
    of the same model), without gradients."""
    with torch.no_grad():
        got = {"logits": model(x["idx"])}
        if "idx2" in x:
            got["logits2"] = model(x["idx2"])
    return got


def own_buffers(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The module's saved buffers that `state` does not name: tables the student's code
    computes for itself (a rotary frequency table, a causal mask), not weights. The grader
    draws none of them, so they stay the module's own (a stranger's correct code may keep
    such a table, as Hugging Face's LLaMA keeps inv_freq and nanoGPT its mask)."""
    names = {name for name, _ in module.named_buffers()}
    return {k: v for k, v in module.state_dict().items() if k in names and k not in state}


def weights_of(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The module's state_dict without its own buffers (own_buffers): after training, the
    names the grader's `state` gave it, as a training check compares them (a saved rotary
    table or causal mask is not a weight the check asked for)."""
    own = own_buffers(module, state)
    return {k: v.detach().clone() for k, v in module.state_dict().items() if k not in own}


def fits(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> bool:
    """Whether the module's weights (weights_of) have exactly the names and shapes of the
    grader's `state`, so that load_weights can load it."""
    own = weights_of(module, state)
    return set(own) == set(state) and all(
        tuple(own[k].shape) == tuple(v.shape) for k, v in state.items()
    )


def load_weights(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> torch.nn.Module:
    """Load the grader's weights `state` into the student's module, its own buffers that the
    grader draws none of kept (own_buffers); any other missing or unexpected name, or a wrong
    shape, fails as a strict load_state_dict does, with PyTorch's message."""
    module.load_state_dict({**own_buffers(module, state), **state})
    return module


# The text of an error the student's code raised, as a check reads it ("the message gives the
# shapes"): all of it, up to MESSAGE_MAX characters, so that a long message that names the sizes
# near its end is read to its end (a verdict shows an excerpt: verdicts.excerpt).
MESSAGE_MAX = 2000


def message_of(e: BaseException) -> str:
    """str(e), up to MESSAGE_MAX characters."""
    return str(e)[:MESSAGE_MAX]


def raised(call: Callable[[], Any], returned: str) -> tuple[str, str]:
    """How `call` ended, for a check that it raises ValueError: ("ValueError", its message)
    for a ValueError (a subclass is one), ("raised <class>", its message) for another exception
    (a finding, not a crash), (`returned`, "") when it returned. NotImplementedError and a
    probe's own Failure go through: they are "not attempted" and a finding."""
    try:
        call()
    except (NotImplementedError, Failure):
        raise
    except ValueError as e:
        return "ValueError", message_of(e)
    except Exception as e:  # noqa: BLE001 (the wrong exception is a finding, not a crash)
        return f"raised {type(e).__name__}", message_of(e)
    return returned, ""


def error_text(e: BaseException, limit: int = 200) -> str:
    """An error as a probe records it for the verdict: its type and the start of its message."""
    return f"{type(e).__name__}: {str(e)[:limit]}"


def guarded(fn: Callable[[], Any]) -> tuple[Any, str | None]:
    """(fn(), None), or (None, the text of the error it raised): a broken call is a finding
    for the verdict, not a crash of the check. NotImplementedError and a probe's own Failure
    go through: they are "not attempted" and a finding."""
    try:
        return fn(), None
    except (NotImplementedError, Failure):
        raise
    except Exception as e:
        return None, error_text(e)


def pair(result: Any, what: str, names: str = "(out, weights)") -> Any:
    """Unpack a student function's 2-tuple result, or fail saying what it returned."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        got = f"a {type(result).__name__}"
        if isinstance(result, (tuple, list)):
            got += f" of length {len(result)}"
        raise Failure(WRONG_TYPE, what=what, expected=f"a pair {names}", got=got)
    return result


def make_inputs(check: Probed, seed: int) -> Inputs:
    """The check's inputs, on the CPU, drawn from its own seed (check.seed(seed))."""
    return draw_inputs(check, check.seed(seed))


def draw_inputs(check: Probed, check_seed: int) -> Inputs:
    """The check's inputs drawn from the check's own seed: what the sandboxed process is given
    (never the submission's seed, from which every check's inputs could be drawn)."""
    inputs = check.inputs(torch.Generator().manual_seed(check_seed))
    if check.part is not None:  # one part of a measured check (core.Check.parts)
        part: Inputs = inputs["parts"][check.part]
        return part
    return inputs


def to_device(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def fresh(x: Mapping[str, torch.Tensor], *names: str) -> list[torch.Tensor]:
    """Copies of x[name] for each name, one set per call of the student's code: code that
    changes an argument in place does not change the next call's arguments. The function's
    one watching check charges that, once (changed-input: its gradient run, whose leaves
    autograd refuses to change in place, or `kept`); the other checks judge what it computes,
    not the change again under other names."""
    return [x[n].clone() for n in names]


def kept(watched: Iterable[tuple[str, torch.Tensor]], run: Callable[[], Outputs]) -> Outputs:
    """run() (a probe's calls of the student's code on the `watched` tensors, each with the
    argument's name), its outputs with CHANGED_KEY: the name of the first of them the code
    changed in place (values, shape or dtype), or "" when it left them as they were
    (verdicts.assert_kept). A tensor changed is given its values back, so that the probe's
    later calls (another check's concern) get what they would have."""
    before = [(name, t, t.clone()) for name, t in watched]
    got = run()
    changed = next((name for name, t, was in before if not _same(t, was)), "")
    if changed:  # the outputs as they are (one may be the argument itself), then the values back
        got = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in got.items()}
        for _, t, was in before:
            with torch.no_grad():
                t.data = was
    return {**got, CHANGED_KEY: changed}


def _same(now: torch.Tensor, was: torch.Tensor) -> bool:
    """The same shape, dtype and values (NaN where NaN was)."""
    if now.shape != was.shape or now.dtype != was.dtype:
        return False
    if now.is_floating_point() or now.is_complex():
        return bool(((now == was) | (now.isnan() & was.isnan())).all())
    return torch.equal(now, was)


def autograd_error(run: Callable[[], Any]) -> str:
    """run() (a forward and backward pass through the student's code): "" when it ran, else
    the first line of the RuntimeError it raised (a graph cut, a gradient count autograd
    refuses, a saved tensor changed in place): a finding for the verdict, not a crash. A
    NotImplementedError (a TODO) goes on as it is."""
    try:
        run()
    except NotImplementedError:
        raise
    except RuntimeError as e:
        first = (str(e).splitlines() or [""])[0].split(" Hint: ")[0].rstrip(". ")  # no hint
        return first if len(first) <= 400 else first[:400].rsplit(" ", 1)[0] + " ..."
    return ""


def gradients(
    module: torch.nn.Module | None,
    run: Callable[..., Any],
    inputs: dict[str, torch.Tensor] | None = None,
) -> Outputs:
    """The gradients after a backward pass from run()'s output (its first item when a tuple):
    each parameter's of `module`, as "grad/<name>" ("none" when none reached it), and with
    `inputs` each input's, as "grad/<input name>": run is then called with copies of them
    that require a gradient, in their order. Or "grad/error": what forward or the backward pass
    raised, from autograd (verdicts.assert_gradients). The backward pass starts from a
    weighted sum of the output, each element its own weight: a plain sum has no gradient
    where the output's rows always sum to the same (a LayerNorm's, a softmax's)."""
    leaves = {name: t.detach().clone().requires_grad_() for name, t in (inputs or {}).items()}
    if module is not None:
        module.zero_grad(set_to_none=True)

    def forward_and_backward() -> None:
        with torch.enable_grad():
            out = run(*leaves.values())
            out = out[0] if isinstance(out, tuple | list) and out else out
            if not isinstance(out, torch.Tensor) or not out.is_floating_point():
                return  # not a tensor of floats: the check's own verdict charges it
            out = out.float()
            weights = torch.linspace(0.5, 1.5, out.numel(), device=out.device)
            loss: Any = (out * weights.reshape(out.shape)).sum()  # Tensor.backward: untyped
            loss.backward()

    error = autograd_error(forward_and_backward)
    in_place = ("leaf Variable that requires grad", "modified by an inplace operation")
    if error and any(text in error for text in in_place) and inputs:  # an input, perhaps
        changed = _changed(run, inputs)
        if changed:
            return {"grad/error": f"RuntimeError: {error}", "grad/changed": changed}
    if error:  # a graph cut or broken in place
        return {"grad/error": f"RuntimeError: {error}"}
    params = {} if module is None else dict(module.named_parameters())
    found = {**params, **leaves}
    return {
        f"grad/{name}": "none" if p.grad is None else p.grad.detach().clone()
        for name, p in found.items()
    }


def _changed(run: Callable[..., Any], inputs: dict[str, torch.Tensor] | None) -> str:
    """The name of the first of `inputs` that run(*copies) changes in place ("" when none
    does, or when it raises): what autograd refused as an in-place change of a leaf."""
    copies = {name: t.detach().clone() for name, t in (inputs or {}).items()}
    try:
        with torch.no_grad():
            run(*copies.values())
    except Exception:  # noqa: BLE001 (autograd's own message is then the finding)
        return ""
    return next((n for n, c in copies.items() if not torch.equal(c, (inputs or {})[n])), "")


def run_probe(check: Probed, module: Any, inputs: Inputs, device: str = "cpu") -> Outputs:
    """Run the probe on `device`; bring every tensor it returns back to the CPU, detached.
    A measured check as a whole (the reference's run: fixtures, reference servers) runs every
    part here, unmeasured, its outputs under "part<k>/" as measure.merge gives them."""
    if getattr(check, "measured", 0) and check.part is None:
        got = {}
        for k, part in enumerate(inputs["parts"]):
            outputs = check.probe(module, to_device(part, device)) or {}
            got.update({f"part{k}/{key}": v for key, v in outputs.items()})
        return _detached(got)
    got = check.probe(module, to_device(inputs, device))
    return _detached(got)


def _detached(got: Any) -> Outputs:
    """A probe's outputs with every plain tensor brought back to the CPU, detached."""
    # nn.Parameter and plain tensors come back as plain, detached CPU tensors; anything else
    # (including odd Tensor subclasses) is left for the verdict to reject by name.
    plain = (torch.Tensor, torch.nn.Parameter)
    return {k: (v.detach().cpu() if type(v) in plain else v) for k, v in (got or {}).items()}


def attempt(
    check: Probed, submission: Loadable, inputs: Inputs, device: str = "cpu"
) -> Outputs | Result:
    """Import the module and run the probe on `inputs`.

    Returns the probe's outputs, or the Result of a check that ended there (import error,
    not attempted, crash, or a Failure the probe raised).
    """
    try:
        module = submission.load(check.module)
    except ImportProblem as p:
        if p.missing:  # nothing to run yet: a TODO, not a broken file
            missing = Failure(
                MISNAMED_FILE if p.near else MISSING_FILE,
                file=p.file,
                module=p.module,
                folder=submission.path.name,
                exercise=check.exercise or check.module,
                found=p.near,
            )
            return Result.of(check, "not attempted", missing)
        failure = Failure(
            IMPORT_ERROR,
            file=p.file,
            error=p.error,
            package=submission.path.name,
            module=p.module,
        )
        return Result.of(check, "failed", failure)

    try:
        got = run_probe(check, module, inputs, device)
    except NotImplementedError as e:
        if raised_in(e, submission.path):
            exercise = check.exercise or str(e).split(":")[0] or check.module
            origin = Path(traceback.extract_tb(e.__traceback__)[-1].filename).stem
            if origin != check.module and origin in MODULES:  # own dependency (student copy)
                name = str(e).split(":")[0]
                exercise = f"{name} in {origin}.py, which {check.module}.py uses,"
                # waiting.hold: the check waits on that file rather than counting as a TODO
                failure = Failure(NOT_ATTEMPTED, exercise=exercise, dependency=origin)
                return Result.of(check, "not attempted", failure)
            return Result.of(check, "not attempted", Failure(NOT_ATTEMPTED, exercise=exercise))
        return Result.of(check, "failed", crash(e, submission.path))
    except Failure as f:
        return Result.of(check, "failed", f)
    except Exception as e:  # student code failed: a crash is the student's, never the grader's
        return Result.of(check, "failed", crash(e, submission.path))
    return got


def _student_frames(e: BaseException, root: Path) -> list[traceback.FrameSummary]:
    frames = traceback.extract_tb(e.__traceback__)
    return [f for f in frames if Path(f.filename).resolve().is_relative_to(root)]


def raised_in(e: BaseException, root: Path) -> bool:
    """Whether `e` was raised by code under `root` (the student's folder)."""
    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(root)


# Python's words when a tuple (here a shape) has another length than the names it is unpacked to.
_UNPACKED_SHAPE = re.compile(r"(not enough|too many) values to unpack \(expected \d+")
LOAD_ERROR = "Error(s) in loading state_dict for"  # torch's load_state_dict, strict
_TENSOR_AS_BOOL = "RuntimeError: Boolean value of Tensor with more than one value is ambiguous"


def _load_problem(line: str) -> str:
    """One line of load_state_dict's error, said from the student's side (core/phrases.py)."""
    line = line.rstrip(".")
    if m := re.match(r"Missing key\(s\) in state_dict: (.*)", line):
        return f"your module has {m[1]}, which the stub does not create here"
    if m := re.match(r"Unexpected key\(s\) in state_dict: (.*)", line):
        return f"your module lacks {m[1]}"
    pattern = r"size mismatch for (\S+): copying a param with shape (.*) from checkpoint, the shape in current model is (.*)"  # noqa: E501
    if m := re.match(pattern, line):
        return f"{m[1]} has the shape {m[3]} in your module, {m[2]} in the stub's"
    return line


def crash(e: BaseException, root: Path) -> Failure:
    """The Failure for an exception from student code, naming their file and line."""
    frames = _student_frames(e, root)
    where = ""
    if frames:
        f = frames[-1]
        where = f"in {Path(f.filename).name}, line {f.lineno}: `{(f.line or '').strip()}`"
    message = str(e).strip().splitlines()
    if isinstance(e, RuntimeError) and message and message[0].startswith(LOAD_ERROR):
        # the grader's weights, loaded strictly into the student's module: name what differs
        module = message[0][len(LOAD_ERROR) :].strip(" :") or "module"
        found = [_load_problem(line.strip()) for line in message[1:] if line.strip()]
        detail = "; ".join(found)[:600] or message[0]
        return Failure(WEIGHTS_NOT_LOADED, module=module, detail=detail)
    error = shown_names(f"{type(e).__name__}: {message[0] if message else ''}".rstrip(": "))
    own = raised_in(e, root) and (frames[-1].line or "").lstrip().startswith(("raise", "assert"))
    if "probability tensor contains" in error:  # torch.multinomial's own words
        return Failure(INVALID_PROBABILITIES, error=error, where=where)
    if isinstance(e, ValueError) and _UNPACKED_SHAPE.match(message[0] if message else ""):
        line = frames[-1].line if frames else ""
        if re.search(r"\.shape\b|\.size\(\s*\)", line or ""):  # B, T, d = x.shape
            return Failure(FIXED_RANK, error=error, where=where)
    if isinstance(e, RuntimeError) and error.startswith(_TENSOR_AS_BOOL) and frames:
        return Failure(TENSOR_AS_BOOL, error=error, where=where)  # `key or query`, `if mask:`
    if isinstance(e, ValueError) and frames and not raised_in(e, root):
        return Failure(CALL_REFUSED, error=error, where=where)  # a stand-in's or torch's check
    return Failure(OWN_RAISE if own else CRASH, error=error, where=where)


def dependency(mod: types.ModuleType, name: str) -> types.ModuleType:
    """The module that `mod` (a student's module, as Submission loaded it) gets for
    `from .<name> import ...`: the trusted stand-in where the kit has one (official grading
    always has it), else the student's own <name>.py (the student copy leaves out the
    stand-ins that implement an exercise; local grading then says so).

    A notebook's namespace (autograder/notebook.py) belongs to no package: it gets what the
    notebook's own imports give (autograder/channels/nbgrader/course.py), the stand-in, else
    assignments/<name>.py.
    """
    if mod.__package__:
        return importlib.import_module(f"{mod.__package__}.{name}")
    trusted = f"autograder.trusted.{name}"
    try:
        return importlib.import_module(trusted)
    except ModuleNotFoundError as e:
        if e.name != trusted:
            raise
        return importlib.import_module(f"assignments.{name}")


class StuckCall(BaseException):
    """Raised by a guard (`guard`): the check called a function that did not finish in an
    earlier check. A BaseException, so `except Exception` in student code lets it through."""


Wrap = Callable[[Callable[..., Any]], Callable[..., Any]]  # original -> what replaces it


def _replace(module: Any, name: str, make: Wrap) -> bool:
    """Put make(original) in place of the function `name` of the student's `module`: a
    function of the module, a class (each method it defines), or "Class.method". Anything
    else (a name the module lacks, a bare method name, a callable object) is left as it is.
    True when something was replaced."""
    owner, _, method = name.partition(".")
    if method:
        cls = getattr(module, owner, None)
        value = vars(cls).get(method) if isinstance(cls, type) else None
        if isinstance(value, types.FunctionType):
            setattr(cls, method, make(value))
            return True
        return False
    found = getattr(module, name, None)
    if isinstance(found, types.FunctionType):
        setattr(module, name, make(found))
        return True
    replaced = False
    if isinstance(found, type):
        for attr, value in list(vars(found).items()):
            if isinstance(value, types.FunctionType):
                setattr(found, attr, make(value))
                replaced = True
            elif isinstance(value, (staticmethod, classmethod)):
                setattr(found, attr, type(value)(make(value.__func__)))
                replaced = True
    return replaced


def guard(module: Any, names: list[str], fire: Callable[[str], None]) -> None:
    """Make each function `names` of the student's `module` end at once when called: it
    calls fire(name) (the process tells the grader: this check is timed out "same as above",
    whatever happens next), then raises StuckCall. A name is a function of the module, a
    class (each method it defines), or "Class.method". Anything else (a name the module
    lacks, a bare method name, a callable object) is left as it is: the check runs for real."""

    def stand_in(name: str) -> Wrap:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def guarded(*args: Any, **kwargs: Any) -> Any:
                fire(name)
                raise StuckCall(name)

            guarded.__name__ = getattr(original, "__name__", name)
            guarded.__qualname__ = getattr(original, "__qualname__", name)
            return guarded

        return make

    for name in names:
        _replace(module, name, stand_in(name))


# The wrapper of probing.track, compiled once and made in each student module's globals.
_TRACKER = compile(
    "def tracker(board, slot, original):\n"
    "    def tracked(*args, **kwargs):\n"
    "        board.enter(slot)\n"
    "        try:\n"
    "            return original(*args, **kwargs)\n"
    "        finally:\n"
    "            board.leave(slot)\n"
    "    return tracked\n",
    "<attention-lab: probing.track>",
    "exec",
)


def track(module: Any, slots: dict[str, int], board: Board) -> None:
    """Tell `board` when each function `slots` names ({name: slot}, names as `guard` takes
    them) of the student's `module` is running: a wrapper that calls the original, marking
    its outermost call's entry and exit (limits.Board). The function itself is unchanged: same
    arguments, result, exceptions, signature, name (functools.update_wrapper) and __globals__
    (the module's); only where a check was stopped is learnt from it (policy.charged)."""

    def tracker(slot: int) -> Wrap:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            # Made in the student's globals, as the original has them: code that looks names
            # up in a function's __globals__ (a probe recording calls) finds the module's;
            # the wrapper itself reads only its arguments (_TRACKER).
            names = getattr(original, "__globals__", None)
            scratch: dict[str, Any] = {}
            exec(_TRACKER, names if isinstance(names, dict) else {}, scratch)
            tracked = scratch["tracker"](board, slot, original)
            return functools.update_wrapper(tracked, original)

        return make

    for name, slot in slots.items():
        if _replace(module, name, tracker(slot)):
            board.track(slot)


class Attempts:
    """`attempt` for a process that runs checks one after another (the worker, the sandbox's
    child), telling the grader through `send` (one message, a dict) what only this process
    sees: that the import of the check's module returned ("loaded": a check stopped before
    was stopped in the file's top-level code), and that the check called a function guarded
    because it did not finish in an earlier process ("stuck"). `guards`: {module: names}.
    `board` (limits.Board, shared with the parent) and `slots` (limits.slots_of the checks):
    which exercise runs, so that a check stopped for its time is charged to the function
    that did not finish (policy.charged)."""

    def __init__(
        self,
        submission: Submission,
        send: Callable[[dict[str, Any]], None],
        guards: dict[str, list[str]] | None = None,
        board: Board | None = None,
        slots: dict[tuple[str, str], int] | None = None,
    ) -> None:
        self.submission, self.send, self.guards = submission, send, guards or {}
        self.board, self.slots = board, slots or {}
        self.current = ""
        self.prepared: set[str] = set()

    def _fire(self, name: str) -> None:
        self.send({"type": "stuck", "check": self.current, "function": name})

    def _prepare(self, name: str, module: Any) -> None:
        """Once per module: track its exercises, then guard what did not finish before."""
        self.prepared.add(name)
        if self.board is not None:
            own = {f: slot for (m, f), slot in self.slots.items() if m == name}
            track(module, own, self.board)
        names = self.guards.get(name)
        if names:
            guard(module, names, self._fire)

    def __call__(self, check: Probed, inputs: Inputs, device: str = "cpu") -> Outputs | Result:
        """attempt(check, ...); never raises for anything the student's code does."""
        self.current = check.id
        if self.board is not None:
            self.board.mark()
        try:
            module = self.submission.load(check.module)
        except BaseException:  # attempt reports it
            module = None
        if module is not None:
            self.send({"type": "loaded", "check": check.id})
            if check.module not in self.prepared:
                self._prepare(check.module, module)
        try:
            return attempt(check, self.submission, inputs, device)
        except BaseException as e:  # StuckCall (the grader knows), SystemExit, ...
            return Result.of(check, "failed", crash(e, self.submission.path))
