"""The data every runner shares: misconceptions, checks and their results."""

from __future__ import annotations

import importlib
import re
import tomllib
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from . import paths

# --------------------------------------------------------------------------- misconceptions


HINT_LEVELS = ("the idea", "the operation or API", "nearly the code")


@dataclass(frozen=True)
class Misconception:
    """A named, classic mistake: what the student probably did, and how to fix it.

    `message` and every hint may hold `{placeholders}` filled by the verdict that detects it.
    `hints` is the hint ladder, one text per level of `HINT_LEVELS` (1: the idea, 2: the
    operation or API to use, 3: nearly the code). A misconception still written with one hint
    string holds it as level 3, with levels 1 and 2 empty.
    """

    id: str
    message: str
    hints: tuple[str, ...] = ("", "", "")

    @property
    def hint(self) -> str:
        """The most detailed level written (what a student sees when no ladder state applies)."""
        return next((h for h in reversed(self.hints) if h), "")

    def level(self, n: int) -> tuple[int, str]:
        """(level, text) of hint level n (1-3), or of the nearest level written: a lower one
        first, then a higher one; (0, "") when no level is written."""
        n = min(max(n, 1), len(self.hints))
        order = list(range(n, 0, -1)) + list(range(n + 1, len(self.hints) + 1))
        return next(((i, self.hints[i - 1]) for i in order if self.hints[i - 1]), (0, ""))


# The kit's catalogue of misconceptions: declarations, filled as the modules that declare
# them are imported (registry.all_misconceptions imports every judge), never per run.
_MISCONCEPTIONS: dict[str, Misconception] = {}
_ORIGIN: dict[str, str] = {}  # id -> the module that declares it (its catalog: i18n)


def misconception(
    id: str, message: str, hint: str | tuple[str, str, str] = "", *, module: str
) -> Misconception:
    """Declare a misconception once; ids are unique across the whole kit. `module`: the
    Python module that declares it (its translation catalog: catalogs.domain_of); a module
    declares its own through `Misconceptions(__name__)`.

    `hint` is the ladder `(idea, operation or API, nearly the code)`, or one string (level 3).
    `origin` is the module it belongs to (its catalog), by default the caller's module; the
    exercise modules' misconceptions are data (misconception_data.py) and name their package.
    """
    hints = ("", "", hint) if isinstance(hint, str) else tuple(hint)
    if len(hints) != len(HINT_LEVELS):
        raise ValueError(
            f"misconception {id!r}: expected {len(HINT_LEVELS)} hint levels "
            f"{HINT_LEVELS}, got {len(hints)}"
        )
    declared_now = Misconception(id, message, hints)
    if id in _MISCONCEPTIONS and _MISCONCEPTIONS[id] != declared_now:
        raise ValueError(f"misconception id {id!r} is declared twice with different texts")
    _MISCONCEPTIONS[id] = declared_now
    _ORIGIN.setdefault(id, module)
    return declared_now


class Misconceptions:
    """The misconceptions one module declares, under its name: at the top of a judge,

        misconception = Misconceptions(__name__)
        SCALE_MISSING = misconception("scale-missing", "...", ("idea", "API", "code"))

    Called as `core.misconception` is, with the module filled in; `ids` lists what this
    module declared, in order."""

    def __init__(self, module: str):
        if not module:
            raise ValueError("Misconceptions(module): name the declaring module (__name__)")
        self.module = module
        self.ids: list[str] = []

    def __call__(
        self, id: str, message: str, hint: str | tuple[str, str, str] = ""
    ) -> Misconception:
        declared_now = misconception(id, message, hint, module=self.module)
        if id not in self.ids:
            self.ids.append(id)
        return declared_now


_declare = Misconceptions(__name__)  # the kit's own outcomes, below


def origin(id: str) -> str:
    """The Python module that declares misconception `id` ('' if unknown)."""
    return _ORIGIN.get(id, "")


def declared() -> dict[str, Misconception]:
    """The misconceptions declared so far (registry.all_misconceptions imports every judge)."""
    return dict(_MISCONCEPTIONS)


# Outcomes every check can have, whatever the exercise.
NOT_ATTEMPTED = _declare(
    "not-attempted",
    "{exercise} is not attempted yet: it still raises NotImplementedError.",
    (
        "The grader starts on an exercise once its body does something: the stub's "
        "NotImplementedError tells it you have not written it yet.",
        "Read the docstring and the TODO steps above the raise: they name the operations "
        "and the shapes of each step.",
        "Replace the `raise NotImplementedError(...)` line in the TODO region with your code.",
    ),
)
MISSING_FILE = _declare(
    "missing-file",
    "{file}: the file is missing, so {exercise} is not attempted yet. Create {module}.py in "
    "{folder}/ with {exercise} in it, as the stub of {module}.py defines it.",
    (
        "Each exercise module is a file of its own in your folder, and the grader found no "
        "{module}.py there, so none of its exercises can run. It counts as not attempted "
        "(0 points), not as a mistake.",
        "The file must be named exactly {module}.py (not .ipynb, not .txt), sit next to the "
        "other module files in {folder}/, and define the functions and classes of its stub, "
        "with the same names and arguments.",
        "Restore the stub, then fill in its TODOs: in the kit's folder, "
        "`git checkout -- assignments/{module}.py`, or copy assignments/{module}.py from a "
        "fresh copy of the kit into {folder}/.",
    ),
)
MISNAMED_FILE = _declare(
    "misnamed-file",
    "{file}: the file is missing, but {folder}/ has {found}, so {exercise} is not attempted "
    "yet: the grader reads only a file named exactly {module}.py.",
    (
        "The grader finds each exercise module by its exact file name, and the file that "
        "looks like your {module}.py has another name: a capital letter, a copy's number from "
        "a download, or a hidden .txt ending.",
        "Rename {found} to {module}.py, in {folder}/ next to the other module files (on "
        "Windows, show file name extensions to see a .txt ending).",
        "In {folder}/: `mv '{found}' {module}.py` (macOS, Linux), `ren \"{found}\" "
        "{module}.py` (Windows); then grade again.",
    ),
)
# The misconceptions of a check not attempted yet: a TODO, never counted as a mistake.
UNSTARTED = frozenset({NOT_ATTEMPTED.id, MISSING_FILE.id, MISNAMED_FILE.id})
IMPORT_ERROR = _declare(
    "import-error",
    "{file} could not be imported, so none of its exercises could be graded: {error}",
    (
        "Python could not even load this file (a syntax error, a bad import, or code at the "
        "top level that fails), so no exercise in it can run.",
        "Fix the file before anything else: the error names the line; a typo, a missing "
        "colon or bracket, or an import of a module that is not installed is the usual cause.",
        "Fix this first: in the kit's folder, run "
        "`.venv/bin/python -c 'import {package}.{module}'` "
        "(the kit's own Python, which has torch) to see the full error.",
    ),
)
CRASH = _declare(
    "crash",
    "Your code raised {error} {where}",
    (
        "Your code stopped with an error before returning: most often two tensors whose "
        "shapes do not fit the operation.",
        "Read the error and the line it names; print the .shape of each tensor on that "
        "line and compare with the shapes in the docstring.",
        "Just before the line the error names, add print(t.shape) for each tensor t on it and "
        "compare with the docstring's shapes; then fix the transpose(...), reshape(...) or "
        "dim= argument that makes them disagree.",
    ),
)
OWN_RAISE = _declare(
    "own-check-refused",
    "Your own check refused this check's inputs, which the docstring allows: {error}, "
    "raised {where}.",
    (
        "The grader called your function with arguments its docstring allows, and a raise "
        "or an assert of your own stopped it: that test is stricter than the docstring.",
        "Read what the docstring allows for the argument your raise or assert tests, and "
        "compare it with the condition: an off-by-one (>= for >, < for <=) or the wrong "
        "argument compared are the usual causes.",
        "Fix the condition in front of that raise so it rejects only what the docstring "
        "rejects: for a limit the docstring allows (T == max_len, window == 1), test "
        "T > max_len, not T >= max_len.",
    ),
)
CALL_REFUSED = _declare(
    "call-refused",
    "A function your code called refused the arguments it was given: {error}, called {where}.",
    (
        "The error comes from a function your code called, not from your own line: an "
        "argument you passed is outside what that function accepts (often an off-by-one, or "
        "a size taken from the wrong tensor).",
        "Read the error: it names the argument and what it expects. Then look at how the line "
        "it names computes that argument, and at the called function's docstring.",
        "Just before that line, print the arguments you pass and compare them with what the "
        "error says is allowed (a window of at least 1, a size that divides another, ...).",
    ),
)
FIXED_RANK = _declare(
    "shape-unpacked-fixed-rank",
    "Your code unpacks a tensor's shape into a fixed number of names ({error}) {where}: this "
    "check passes a tensor with another number of dimensions, which the docstring allows.",
    (
        "A docstring shape such as (..., T, d) allows any number of leading dimensions: "
        "(T, d), (B, T, d) and (B, H, T, d) all fit, and one code must handle each.",
        "Take the sizes you need from the end (d = x.shape[-1], T = x.shape[-2]) and leave "
        "the leading dimensions unnamed: index from the end (dim=-1, x[..., :half]) and "
        "let broadcasting carry the rest.",
        "Replace a line such as `B, H, T, d = x.shape` with `T, d = x.shape[-2:]`; where you "
        "must reshape, keep the leading sizes as they are: x.reshape(*x.shape[:-1], a, b).",
    ),
)
TENSOR_AS_BOOL = _declare(
    "tensor-as-bool",
    "Your code asked Python whether a tensor is true ({error}) {where}: `if t:`, `t or "
    "default`, `not t` and `a and b` need one True or False, and a tensor of several values "
    "has none.",
    (
        "Python's `if`, `or`, `and` and `not` turn their operand into one bool. A tensor "
        "of several values cannot say one True or False, so torch raises; a default written "
        "as `key = key or query` or a test written as `if mask:` hits this as soon as the "
        "argument is a real tensor.",
        "For a missing argument, test for None: `if key is None`. For a question about a "
        "tensor's values, say which: `t.any()`, `t.all()`, or compare its shape.",
        "Replace `key = key or query` with `key = query if key is None else key`, and "
        "`if mask:` with `if mask is not None:`.",
    ),
)
WEIGHTS_NOT_LOADED = _declare(
    "weights-not-loaded",
    "The grader could not load its weights into your {module}: {detail}. It loads them by "
    "the names and shapes the stub gives the parameters (load_state_dict, strict).",
    (
        "The grader draws the weights itself and loads them into your module by name, so "
        "every check compares the same computation: your module must hold exactly the "
        "parameters the stub creates, under the same names and with the same shapes.",
        "Compare your __init__ with the stub's: the attribute names (w_q, not q_proj), the "
        "nn.Linear(in_features, out_features) sizes, bias=bias where the stub passes it (no "
        "bias when bias=False), and no parameter the stub does not create.",
        "print({{k: tuple(v.shape) for k, v in model.state_dict().items()}}) for your module "
        "and for the names and shapes in the error, then make __init__ create those.",
    ),
)
CHANGED_INPUT = _declare(
    "changed-input",
    "Your {what} changed the tensor it was given as {name} in place: after the call, the "
    "caller's {name} held other values. It must compute into new tensors and leave its "
    "arguments as they were.",
    (
        "A function's arguments belong to its caller, who may use them again: a block adds "
        "its input x back after norm(x) or attn(x), so an x changed in place breaks that sum "
        "(and autograd's backward pass refuses it).",
        "Look for an in-place operation on an argument: x /= ..., x += ..., x[...] = ..., "
        "x.mul_(...), x.add_(...), an op with out=x; write the result into a new tensor "
        "instead.",
        "y = x / scale, or torch.cat([a, b], dim=-1) for halves, not x /= scale or "
        "x[..., :half] = a: then return y, a new tensor.",
    ),
)
NO_GRADIENT = _declare(
    "no-gradient",
    "{what}: {detail}. A backward pass from its output must reach every input and "
    "parameter it computes with; the code never used it, or a step in it cut the graph.",
    (
        "Training follows the gradients backward through what the code computed: a step "
        "taken outside autograd's record leaves everything before it without a gradient (the "
        "parameters, and the layers that made the inputs), and they never learn.",
        "Look for an input or parameter the code never uses (one layer called where another "
        "was meant), .detach(), .data, torch.no_grad(), a trip through .item(), .tolist() or "
        ".numpy(), a tensor rebuilt with torch.tensor(...), or an in-place operation on a "
        "tensor autograd saved for the backward pass (nn.Dropout(inplace=True) on softmax "
        "weights, x.mul_ after an exp).",
        "Use the parameters themselves (self.weight, not self.weight.data), keep every step in "
        "torch operations, and make new tensors (F.dropout(w, p, self.training), y = y * w) "
        "instead of changing saved ones in place.",
    ),
)
# The probe outputs' key for what a probe's run of the student's code changed in place among
# the arguments it watched (run/probing.kept): the argument's name, or "" when none.
CHANGED_KEY = "changed-input"
INVALID_PROBABILITIES = _declare(
    "sampling-invalid-probabilities",
    "Your code gave torch.multinomial a row of probabilities that is NaN, infinite or "
    "negative ({error}) {where}: every token was masked out (top-k with <= where < belongs "
    "keeps k - 1 tokens, none for k = 1), or the logits were NaN before the softmax.",
    (
        "multinomial samples from a row of probabilities that are finite, at least 0 and not "
        "all 0; a row whose logits are all -inf gives NaN after the softmax.",
        "Mask only the logits strictly below the k-th largest, so that the k largest (ties "
        "included) stay; then take the softmax and sample.",
        "v, _ = torch.topk(logits, k); logits = logits.masked_fill(logits < v[:, [-1]], "
        'float("-inf"))',
    ),
)
TIMEOUT = _declare(
    "timeout",
    "This check did not finish within {seconds} CPU seconds (many times what the reference "
    "needs): an endless loop, or far too slow.",
    (
        "Attention is a few whole-tensor operations; code that loops over single entries, or "
        "a loop whose condition never changes, runs far longer than it should.",
        "Replace Python loops over positions or entries with batched tensor operations "
        "(matmul, broadcasting); check that every `while` loop moves towards its end.",
        "Look for a `while` loop that never ends, or a loop over elements that could be one "
        "tensor operation.",
    ),
)
WRONG_TYPE = _declare(
    "wrong-return-type",
    "{what} should be {expected}, but your code returned {got}.",
    (
        "The function returns something of another kind than the docstring promises (a "
        "tuple instead of a tensor, None, a list, ...).",
        "Read the docstring's Returns line: how many values, in which order, and whether "
        "each is a torch.Tensor.",
        "Make the last line match the docstring's Returns: return out, weights for a pair, "
        "return out for one tensor; not a list, not None, not print(...).",
    ),
)
WRONG_SHAPE = _declare(
    "wrong-shape",
    "{what} has shape {got}, expected {expected}.",
    (
        "Each step of attention changes the shape in a known way; one axis is missing, "
        "extra or in the wrong place.",
        "Compare each step with the docstring's shapes (B, H, L, S, d_k): look at "
        "transpose / view / reshape and at the axis of each reduction.",
        "After each step add print(t.shape) and compare with the docstring's shape comments; "
        "fix the first step that differs: its transpose(...), reshape(...) or the dim= of its "
        "reduction (keepdim=True keeps the axis).",
    ),
)
WRONG_DTYPE = _declare(
    "wrong-dtype",
    "{what} has dtype {got}, expected {expected}.",
    (
        "The result should keep the precision of the inputs (float64 inputs give float64 "
        "outputs); a new tensor created along the way changed it.",
        "Find where you create a tensor (torch.zeros, torch.tensor, torch.full, torch.arange) "
        "and give it the inputs' dtype.",
        "Create new tensors as torch.zeros(..., dtype=x.dtype, device=x.device), or "
        "torch.zeros_like(x) and torch.full_like(x, value); do not call .float() or .double() "
        "on the result.",
    ),
)
WRONG_DEVICE = _declare(
    "wrong-device",
    "{what} is on device {got}, expected {expected}.",
    (
        "Every tensor of one computation must live on the same device as the inputs "
        "(CPU or GPU); a tensor you create is elsewhere.",
        "Find where you create tensors (masks, positions, constants) and give them the "
        "inputs' device.",
        "Create new tensors on the inputs' device (device=x.device) or pass `device` through.",
    ),
)
NOT_FINITE = _declare(
    "not-finite",
    "{what} contains NaN or infinity ({count} entries).",
    (
        "Somewhere a value overflowed or was undefined: a softmax over a row where every "
        "position is masked, a log of 0 or a division by 0.",
        "Print torch.isfinite(...).all() after each step to find the first one that "
        "produces NaN or inf; look at masked_fill values and denominators.",
        "Add print(torch.isfinite(t).all()) after each step; at the first False look for "
        "torch.log(0), a division x / 0 (eps belongs under torch.sqrt), torch.exp of a large "
        "number, or torch.softmax over a row that is all float('-inf').",
    ),
)
NO_EVIDENCE = _declare(
    "no-evidence",
    "{what} {how}: such an output cannot show the property this check is about, whatever the "
    "code does around it.",
    (
        "A property (dropout off in eval mode, a shape, a device) is only shown by a module "
        "that computes something: its outputs must be finite, vary with the input and not "
        "hand the input back unchanged.",
        "Make the function compute what its docstring says first (the checks that compare "
        "values with the reference show how far it is); this check then judges the property "
        "on your own outputs.",
        "Look for a return of zeros, a constant, the input itself, or values that overflow "
        "to inf or NaN.",
    ),
)
WRONG_VALUES = _declare(
    "wrong-values",
    "The values of {what} differ from the reference: largest error {err:.3g} at index {index} "
    "(yours {got:.6g}, expected {want:.6g}).",
    # The ladder of a check outside any exercise: each exercise's own replaces it
    # (checks/<module>/wrong_values.toml, misconception_data.own_ladder).
    (
        "The shapes are right but the numbers are not: one step of the computation differs "
        "from the equation in the docstring.",
        "Take each step of the docstring's equation in turn and check which operation and "
        "which axis each one uses.",
        "Work the docstring's equation by hand on an input of two or three numbers, then "
        "print each intermediate tensor of your code on that input and find the first one "
        "that differs.",
    ),
)
GRADER_ERROR = _declare(
    "grader-error",
    "The grader itself failed on this check ({error}). This is a bug in the kit, not in your code.",
    (
        "This is not about your code: the grader itself failed.",
        "Nothing to change in your code for this check; the other checks still count.",
        "Please report it to your instructor with the output above.",
    ),
)

UNNAMED = _declare(
    "not-named-in-this-copy",
    "Your result is not the reference's, and this copy of the kit cannot tell which mistake "
    "it is: naming it needs the grader's models of the computation, which the student copy "
    "leaves out. Official grading names it.",
    (
        "The check compares your result with the reference and found a difference.",
        "Reread the docstring's formula and compare it, step by step, with your code.",
        "Run your function on a tiny input you can work out by hand, such as "
        "torch.tensor([[1.0, 2.0], [3.0, 4.0]]), print(...) each intermediate tensor and "
        "compare it with your hand computation.",
    ),
)


class Failure(Exception):
    """Raised by a verdict: the student's result shows `misconception`."""

    def __init__(self, misconception: Misconception, **details: Any):
        self.misconception = misconception
        self.details = details
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return _fill(self.misconception.message, self.details)

    @property
    def hint(self) -> str:
        return _fill(self.misconception.hint, self.details)


def _fill(text: str, details: dict[str, Any]) -> str:
    try:
        return text.format(**details)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        return text


def plain_details(details: dict[str, Any]) -> dict[str, str | int | float | bool | None]:
    """A Failure's details as JSON values (numbers kept for format specs such as {err:.3g},
    everything else as the text `format` would print), so a Result can travel over a pipe
    and be worded again later, in another language (i18n.message)."""
    plain: dict[str, str | int | float | bool | None] = {}
    for key, value in details.items():
        ok = value is None or type(value) in (str, int, float, bool)
        plain[str(key)] = value if ok else str(value)
    return plain


# --------------------------------------------------------------------------- checks

Inputs = dict[str, Any]
Outputs = dict[str, Any]
InputsFn = Callable[[Any], Inputs]
ProbeFn = Callable[[Any, Inputs], Outputs]
VerdictFn = Callable[[Outputs, Outputs | None, Inputs], None]

# A probe-side function is named by "autograder.checks.<module>.<probe file>:<function>"; a
# process that runs student code imports it by that name and nothing of the judge side.
_PROBE_REF = re.compile(r"^autograder\.checks\.[a-z_0-9]+\.probe[a-z_0-9]*:[A-Za-z_][A-Za-z_0-9]*$")


def ref_of(fn: Callable[..., Any]) -> str:
    """The import name of a probe-side function (module:function)."""
    ref = f"{fn.__module__}:{fn.__qualname__}"
    if not _PROBE_REF.match(ref):
        raise ValueError(
            f"{ref} is not a probe-side function: inputs and probes live in "
            "autograder/checks/<module>/probe*.py, as top-level functions"
        )
    return ref


def resolve(ref: str) -> Callable[..., Any]:
    """The probe-side function named by `ref` (validated: nothing else can be imported)."""
    if not isinstance(ref, str) or not _PROBE_REF.match(ref):
        raise ValueError(f"expected a probe-side function name, got {ref!r}")
    module, name = ref.split(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return fn


def no_reference(verdict: VerdictFn) -> VerdictFn:
    """Declare that `verdict` never reads `want`, the reference outputs: it judges the
    student's outputs on their own (properties, thresholds, raised errors). The hidden tier's
    reference servers then skip computing its reference (Check.compares). A verdict without
    this declaration is taken to read `want`; a kit test (test_architecture) holds every
    declaration to the verdict's code, both ways.

        @SDPA.check("causal-device", inputs=probe.inputs_device)
        @no_reference
        def verdict_device(got, want, x): ...
    """
    verdict.reads_reference = False  # type: ignore[attr-defined]
    return verdict


@dataclass(frozen=True)
class Check:
    """One graded check = inputs + probe + verdict.

    inputs(gen) -> Inputs              deterministic from the generator's seed (CPU tensors)
    probe(module, inputs) -> Outputs   runs the student's code; returns plain tensors/values
    verdict(got, want, inputs) -> None raises Failure; `want` is probe(solution, inputs),
                                       stored as a fixture (public tier) or computed from
                                       solutions/ at grading time (hidden tier)

    inputs and probe live on the probe side (autograder/checks/<module>/probe*.py), the
    verdict on the judge side (judge*.py); declare checks with CheckList.check.
    """

    module: str
    slug: str
    title: str
    points: float
    inputs: InputsFn
    probe: ProbeFn
    verdict: VerdictFn
    exercise: str = ""  # the function or class it grades, named in "not attempted"
    # CPU seconds the probe may use at least; the grading machine's limit is
    # max(timeout, k x the reference's own CPU time) (limits.py).
    timeout: float = 20.0
    # A slow check (a training run) runs only when asked for (`make grade-train`), and has
    # no stored reference: its verdict judges against thresholds, since a training run's
    # floats are not bitwise reproducible across machines.
    slow: bool = False
    # Evidence the student's process produces (an op count, a recorder inside that process):
    # student code could forge it, so the check is advice, worth no points in any channel
    # (docs/principles.md, principle 9), and says so in its title.
    forgeable: bool = False
    # replays(inputs) -> {name: tensor}: what the judge's models (verdicts.model) give on
    # these inputs, computed on the trusted side with the reference and kept in it as
    # "replay/<name>", so that the verdict compares with them and calls no model itself:
    # the student copy, which has no model code, then judges exactly as the instructor's.
    replays: Callable[[Inputs], dict[str, Any]] | None = None
    # Measured from outside (run/measure.py): the inputs hold `measured` parts
    # (inputs["parts"], e.g. T and 2T); each part's probe runs in a fresh process of its own,
    # whose peak memory and CPU seconds the trusted parent reads from the kernel and adds to
    # the outputs as "part<k>/measured/<name>" (nothing the student's process says counts).
    measured: int = 0
    # One part of a measured check (Check.parts): its probe gets inputs["parts"][part].
    part: int | None = None

    @property
    def id(self) -> str:
        base = f"{self.module}.{self.slug}"
        return base if self.part is None else f"{base}#{self.part}"

    def parts(self) -> list[Check]:
        """The parts of a measured check, each run in a fresh process ([] if not measured)."""
        return [replace(self, part=k) for k in range(self.measured)]

    @property
    def name(self) -> str:
        return f"{self.module}: {self.title}"

    @property
    def compares(self) -> bool:
        """Whether the verdict may read the reference outputs (`want`). False only for a
        verdict declared `@no_reference` (it judges the outputs against properties and
        thresholds) and no replays: the hidden tier's reference servers skip computing its
        reference (reference_fork.py)."""
        return self.replays is not None or getattr(self.verdict, "reads_reference", True)

    def seed(self, base_seed: int) -> int:
        """Each check draws its inputs from its own seed, so adding a check moves no other
        (the parts of a measured check draw the check's own)."""
        return zlib.crc32(f"{base_seed}:{self.module}.{self.slug}".encode())

    def spec(self) -> dict[str, Any]:
        """What the probe side needs to run this check, as plain data (no judge-side code)."""
        return {
            "id": self.id,
            "module": self.module,
            "slug": self.slug,
            "exercise": self.exercise,
            "inputs": ref_of(self.inputs),
            "probe": ref_of(self.probe),
            "timeout": float(self.timeout),
            "part": self.part,
        }


@dataclass(frozen=True)
class ProbeSpec:
    """The probe side of a check, rebuilt from Check.spec() in the process that runs student
    code: enough to draw the inputs and run the probe, nothing to judge with."""

    id: str
    module: str
    slug: str
    exercise: str
    inputs: InputsFn
    probe: ProbeFn
    timeout: float = 20.0
    part: int | None = None  # Check.part

    @classmethod
    def of(cls, spec: dict[str, Any]) -> ProbeSpec:
        part = spec.get("part")
        return cls(
            id=str(spec["id"]),
            module=str(spec["module"]),
            slug=str(spec["slug"]),
            exercise=str(spec["exercise"]),
            inputs=resolve(spec["inputs"]),
            probe=resolve(spec["probe"]),
            timeout=float(spec.get("timeout", 20.0)),
            part=None if part is None else int(part),
        )

    def seed(self, base_seed: int) -> int:
        return zlib.crc32(f"{base_seed}:{self.module}.{self.slug}".encode())


DATA_FILE = "checks.toml"


@cache
def declared_checks(module: str) -> dict[str, tuple[str, float]]:
    """{slug: (title, points)} of an exercise module's checks, in the order students meet
    them: autograder/checks/<module>/checks.toml, one table per slug with its `title` (an
    English text, the msgid of checks-<module>.po) and its `points`. ValueError for a table
    with other keys or values of another type."""
    path = paths.CHECKS / module / DATA_FILE
    with path.open("rb") as f:
        data = tomllib.load(f)
    found: dict[str, tuple[str, float]] = {}
    for slug, table in data.items():
        table = table if isinstance(table, dict) else {}
        title, points = table.get("title"), table.get("points")
        if set(table) != {"title", "points"} or not isinstance(title, str):
            raise ValueError(f"{path}: [{slug}] needs a title (a string) and points, nothing else")
        if not isinstance(points, int | float) or isinstance(points, bool):
            raise ValueError(f"{path}: [{slug}] points must be a number, not {points!r}")
        found[slug] = (title, points)
    return found


class CheckList(list[Check]):
    """The checks of one exercise module, declared next to their verdicts (judge.py), with
    their titles and points as data (checks.toml, `declared_checks`):

        CHECKS = CheckList("attention")
        SDPA = CHECKS.exercise("scaled_dot_product_attention", probe=probe.probe_sdpa)

        @SDPA.check("scale", inputs=probe.inputs_scale)
        def verdict_scale(got, want, x): ...

    A verdict shared by several checks is declared again with `verdict=`:
        SDPA.check("float64", inputs=probe.inputs_float64, verdict=verdict_reference)
    Checks keep the order of their declarations (the order students meet them), which is the
    order of checks.toml (registry.checks_of holds the two to each other). A CheckList of no
    exercise module (a test's) passes `title` and `points` itself.
    """

    def __init__(self, module: str):
        super().__init__()
        self.module = module

    def check(
        self,
        slug: str,
        title: str | None = None,
        points: float | None = None,
        *,
        inputs: InputsFn,
        probe: ProbeFn,
        exercise: str = "",
        timeout: float = 20.0,
        slow: bool = False,
        forgeable: bool = False,
        verdict: VerdictFn | None = None,
        replays: Callable[[Inputs], dict[str, Any]] | None = None,
        measured: int = 0,
    ) -> Callable[..., Any]:  # the verdict, or (verdict=None) a decorator that registers one
        if title is None or points is None:
            data = declared_checks(self.module)
            if slug not in data:
                raise ValueError(
                    f"check {self.module}.{slug} has no table in "
                    f"autograder/checks/{self.module}/{DATA_FILE} (its title and points)"
                )
            title, points = data[slug]
        if any(c.slug == slug for c in self):
            raise ValueError(f"check {self.module}.{slug} is declared twice")
        if forgeable:
            if points:
                raise ValueError(
                    f"check {self.module}.{slug} judges evidence from the student's process "
                    f"(forgeable=True), so it may carry no points, not {points}"
                )
            title += " (advice, 0 points: measured inside your own process)"

        def register(fn: VerdictFn) -> VerdictFn:
            self.append(
                Check(
                    self.module,
                    slug,
                    title,
                    points,
                    inputs,
                    probe,
                    fn,
                    exercise,
                    timeout,
                    slow,
                    forgeable,
                    replays,
                    measured,
                )
            )
            return fn

        if verdict is not None:
            register(verdict)
            return verdict
        return register

    def exercise(self, exercise: str, *, probe: ProbeFn) -> Exercise:
        """The checks of one exercise, most of them through one probe:

        MERGE = CHECKS.exercise("merge_heads", probe=probe.probe_merge)

        @MERGE.check("shape", inputs=probe.inputs_merge)
        def verdict_shape(got, want, x): ...
        """
        return Exercise(self, exercise, probe)


@dataclass(frozen=True)
class Exercise:
    """`CheckList.check` with the exercise and its usual probe filled in."""

    checks: CheckList
    name: str
    probe: ProbeFn

    def check(
        self,
        slug: str,
        title: str | None = None,
        points: float | None = None,
        *,
        probe: ProbeFn | None = None,
        **options: Any,
    ) -> Callable[..., Any]:
        """CheckList.check(slug, inputs=..., ...) with probe and exercise set."""
        return self.checks.check(
            slug, title, points, probe=probe or self.probe, exercise=self.name, **options
        )

    def advice(self, slug: str, **options: Any) -> Callable[[VerdictFn], VerdictFn]:
        """An advice check: `check(slug, forgeable=True, ...)` (it judges evidence from the
        student's own process, so it carries no points) whose verdict judges that evidence on
        its own (no_reference)."""
        register = self.check(slug, forgeable=True, **options)
        return lambda verdict: register(no_reference(verdict))


class Status(StrEnum):
    """How a check ended."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not attempted"
    TIMED_OUT = "timed out"
    ERROR = "error"  # the grader's own failure, never the student's
    # Local grading with the student's own dependency (the student copy has no stand-in for
    # it) while that dependency fails its own checks: the check is not judged, counted
    # neither as won nor as lost (waiting.py). Never in official grading.
    WAITING = "waiting"


@dataclass
class Result:
    check_id: str
    name: str
    module: str
    points: float
    score: float
    status: Status
    misconception: str = ""
    message: str = ""
    hint: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # The misconception's placeholders ({what}, {got}, ...) as JSON values: the feedback is
    # worded at display time (i18n.message), in the student's language; `message` and `hint`
    # keep the English text, for logs and results.json.
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    @property
    def note(self) -> bool:
        """A 0-point check that did not pass (advice, such as an efficiency check): it costs
        nothing, so every channel shows it as a NOTE, not as a failure to fix."""
        return self.status == Status.FAILED and not self.points

    @classmethod
    def of(cls, check: Check | ProbeSpec, status: str, failure: Failure | None = None) -> Result:
        status = Status(status)
        points = getattr(check, "points", 0.0)
        return cls(
            check_id=check.id,
            name=getattr(check, "name", check.id),
            module=check.module,
            points=points,
            score=points if status == Status.PASSED else 0.0,
            status=status,
            misconception=failure.misconception.id if failure else "",
            message=failure.message if failure else "",
            hint=_own_hint(check, failure) if failure else "",
            details=plain_details(failure.details) if failure else {},
        )


class Totals:
    """A submission's totals over its `results`: the points won (score) and the points of
    the checks graded (max_score; a partial module's left-out checks not counted)."""

    results: list[Result]

    @property
    def score(self) -> float:
        return sum(r.score for r in self.results)

    @property
    def max_score(self) -> float:
        return sum(r.points for r in self.results)


# ------------------------------------------------------------ each exercise's wrong-values ladder

LADDER_FILE = "wrong_values.toml"
LEVEL_KEYS = ("idea", "operation", "code")  # HINT_LEVELS, in the same order


def ladder_file(module: str) -> Path:
    """autograder/checks/<module>/wrong_values.toml."""
    return paths.CHECKS / module / LADDER_FILE


def read_ladders(path: Path) -> dict[str, tuple[str, str, str]]:
    """{exercise: (idea, operation, code)} in the file's order ({} when there is no file);
    ValueError for a table with other keys or a level left out."""
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return {}
    found: dict[str, tuple[str, str, str]] = {}
    for exercise, entry in data.items():
        if not isinstance(entry, dict) or set(entry) != set(LEVEL_KEYS):
            raise ValueError(f"{path}: [{exercise}] needs exactly the keys {LEVEL_KEYS}")
        texts = tuple(entry[k] for k in LEVEL_KEYS)
        if not all(isinstance(t, str) and t.strip() for t in texts):
            raise ValueError(f"{path}: [{exercise}] needs three texts")
        found[exercise] = (texts[0], texts[1], texts[2])
    return found


@cache
def ladders(module: str) -> Mapping[str, tuple[str, str, str]]:
    """{exercise: its wrong-values ladder} of an exercise module."""
    return read_ladders(ladder_file(module))


def own_ladder(m: Misconception, module: str, exercise: str) -> Misconception:
    """`m` as the student of `exercise` (of `module`) reads it: core's "wrong-values" with
    that exercise's own hint ladder when its module writes one; else `m` itself."""
    if m.id != WRONG_VALUES.id or not exercise or not module.isidentifier():
        return m
    try:
        hints = ladders(module).get(exercise)
    except (OSError, ValueError):
        return m
    return m if hints is None else Misconception(m.id, m.message, hints)


def _own_hint(check: Check | ProbeSpec, failure: Failure) -> str:
    """The failure's English hint, from its exercise's own ladder where it has one
    (own_ladder: wrong-values)."""
    m = own_ladder(failure.misconception, check.module, getattr(check, "exercise", ""))
    return _fill(m.hint, failure.details)
