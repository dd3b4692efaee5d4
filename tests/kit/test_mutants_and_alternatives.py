"""Every mutant loses points with its own misconception; every alternative gets full marks.

Each variant is graded once, public tier, with the engine of `make grade` (run.engine.grade on
a copy of solutions/ with the variant in place of its module): the grading `make dist` does
while it records the judges' models (autograder/core/model_replays.py), whose record of what
each variant lost ([check slug, mistake id]) is cached in build/model-replays/ and stamped
with the hash of everything it depends on (the engine, the module's judges, solutions/, the
variants, the fixtures, torch). Where a module's record is missing or stale, the stale modules
are recorded now, as `make dist` records them; make test's student copy and
tools/student_copy_check.py use the same record. The same record keeps each variant's failing
results, which the Chinese test words again (LANG=zh_CN) without grading anything twice.
"""

import functools
import importlib.util
import re

import pytest
from conftest import ROOT, declared_losses, expected_misconception, variants

from autograder.core import i18n, model_replays, paths, syllabus
from autograder.core.check import Result, Status
from autograder.core.registry import all_misconceptions
from autograder.feedback import report
from autograder.feedback.ladder import ALL_LEVELS

CACHE = paths.BUILD / "model-replays"


@pytest.fixture(scope="session")
def kit_grades():
    """lost(module, path): [(check slug, mistake id)] of every check the variant at `path`
    lost when the kit graded it (path None: the solution)."""
    graded: dict[str, dict[str, list]] = {}

    def lost(module, path=None):
        if module not in graded:
            found = model_replays.recorded_grades(module, CACHE)
            if found is None:  # missing or stale: record as `make dist` does, every module
                # at once (a verdict may call another module's model, recorded in its file)
                model_replays.compute(list(syllabus.MODULES), CACHE)
                found = model_replays.recorded_grades(module, CACHE)
            assert found is not None, f"{module}: grading its variants left no record"
            graded[module] = found
        name = "solution" if path is None else f"{path.parent.parent.name[:-1]} {path.stem}"
        return [tuple(pair) for pair in graded[module][name]]

    return lost


@pytest.mark.parametrize(("module", "path"), variants("mutants"))
def test_mutant_loses_points_with_its_misconception(module, path, kit_grades):
    expected = expected_misconception(path)
    assert expected in all_misconceptions(), f"{path.name} expects an undeclared id {expected}"
    lost = kit_grades(module, path)
    assert lost, f"mutant {path.name} got full marks"
    named = {misconception for _, misconception in lost}
    assert expected in named, f"{path.name}: expected [{expected}], the grader said {named}"
    assert "grader-error" not in named and "crash" not in named
    charged = declared_losses(path)
    if charged is not None:  # each difference is charged once, where its check names it
        lost_slugs = {slug for slug, _ in lost}
        assert lost_slugs == charged, (
            f"{path.name} lost {sorted(lost_slugs)}, not {sorted(charged)}"
        )


@pytest.mark.parametrize(("module", "path"), variants("alternatives"))
def test_alternative_gets_full_marks(module, path, kit_grades):
    failed = kit_grades(module, path)
    assert not failed, f"alternative {path.name} lost points: {failed}"


def test_enough_variants_per_module():
    mutants, alternatives = variants("mutants"), variants("alternatives")
    assert len([m for m in mutants if m.values[0] in ("attention", "masks")]) >= 12
    assert len([a for a in alternatives if a.values[0] in ("attention", "masks")]) >= 5


# --------------------------------------------------------------------------- in Chinese

# Words that stay in English in Chinese deep-learning writing, and names (people, projects)
# that the feedback cites; beside them, code is not English: identifiers of the stubs and
# solutions, PyTorch's, matplotlib's and Python's names, the misconception ids, and names with
# a capital inside (GELU, LayerNorm, NaN, Pre-LN).
KEPT_IN_ENGLISH = frozenset(
    "softmax dropout logits logit eval argmax one-hot top-k ln vmin vmax cmap f-string "
    "pre-norm post-norm Transformer Annotated Sparse Swish Python Hugging Face Meta Vaswani "
    "Katharopoulos True False None raise try finally return Returns phi meta".split()
)
_CODE_RUN = re.compile(r"=|_|\w\.\w|\w\(|\[|@|->")
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")
# The student's own error text (PyTorch's English), shown as it is: "RuntimeError: ...".
_RAISED = re.compile(r"\b[A-Z]\w*(Error|Exception): [^）。]*")


@functools.cache
def _code_words() -> frozenset[str]:
    import builtins
    import io
    import keyword
    import tokenize

    import matplotlib.axes
    import matplotlib.figure
    import torch

    words = set(dir(builtins)) | {"Axes"} | set(all_misconceptions()) | set(syllabus.MODULES)
    for space in (torch, torch.Tensor, torch.nn, torch.nn.functional, torch.special, torch.optim):
        words |= set(dir(space))
    words |= set(dir(matplotlib.axes.Axes)) | set(dir(matplotlib.figure.Figure))
    for folder in ("assignments", "solutions"):
        for source in (paths.ROOT / folder).glob("*.py"):
            lines = io.StringIO(source.read_text(encoding="utf-8")).readline
            words |= {t.string for t in tokenize.generate_tokens(lines) if t.type == 1}
    return frozenset(w for w in words if not keyword.iskeyword(w))  # "not", "in": English


def english_words(text: str) -> list[str]:
    """The English words of a Chinese text outside code: `code` spans, quoted literals, and
    runs between Chinese characters that hold code (a call, an attribute, an argument, an
    index) are code; single letters, identifiers and KEPT_IN_ENGLISH are not
    English words."""
    text = re.sub(r"`[^`]*`|'[^']*'", " ", _RAISED.sub(" ", text))
    found = []
    for run in _NOT_ASCII.split(text):
        if _CODE_RUN.search(run):
            continue
        for word in re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", run):
            if len(word) < 2 or word in KEPT_IN_ENGLISH or word in _code_words():
                continue
            if any(c.isdigit() for c in word):
                continue
            if any(c.isupper() for c in word[1:]):
                continue
            found.append(word)
    return found


def test_english_words_finds_english_and_leaves_code():
    assert english_words("the weights 的数值与参考结果不同") == ["the"]
    assert english_words("：the values kept were not divided by 1 - p。") == [
        "the",  # values, kept: names in the solutions' code
        "were",
        "not",
        "divided",
        "by",
    ]
    assert english_words("Hint 1/3（思路）：层归一化") == ["Hint"]
    assert english_words("提示：Take each step in turn") == ["Take", "each", "in", "turn"]
    assert not english_words("用 `x.mean(dim=-1)` 求均值；mask 为 True 时屏蔽，softmax 之前")
    assert not english_words("q = x.reshape(B, T, H, d_k) 之后用 LayerNorm、GELU 和 NaN")
    assert not english_words("你的代码抛出了 RuntimeError: Sizes of tensors must match。")


def _raised_by_their_code(r):
    """The error messages the student's code raised (PyTorch's English), shown as they are."""
    details = {k: v for k, v in r.details.items() if isinstance(v, str)}
    found = [details["error"]] if "error" in details else []
    return found + [v.removeprefix("it raised: ") for v in details.values() if "it raised: " in v]


def _results(module, kit_grades):
    kit_grades(module)  # the record is fresh (recorded now when missing or stale)
    found = model_replays.recorded_results(module, CACHE)
    assert found is not None, f"{module}: the record keeps no results"
    return {
        name: [Result(**{**r, "status": Status(r["status"])}) for r in rows]
        for name, rows in found.items()
        if name.startswith("mutant ")
    }


@pytest.mark.parametrize("module", syllabus.MODULES)
def test_every_mutant_reads_in_chinese(module, kit_grades):
    """Every mutant's feedback, worded again under LANG=zh_CN: the check titles, messages and
    the three hint levels hold no English word outside code, and the table's lines, wrapped
    by terminal columns, never start with closing punctuation."""
    problems = []
    try:
        i18n.use("zh_CN.UTF-8")
        for name, results in _results(module, kit_grades).items():
            for r in results:
                texts = [i18n.name(r.name), i18n.message(r), *i18n.hint_lines(r, ALL_LEVELS)]
                for text in texts:
                    for theirs in _raised_by_their_code(r):
                        text = text.replace(theirs, " ")
                    words = english_words(text)
                    if words:
                        problems.append(f"{name} [{r.misconception}] {words}: {text[:160]}")
            table = report.table(results, name, hints=ALL_LEVELS)
            for line in table.splitlines():
                if line.strip()[:1] in report.NO_LINE_START:
                    problems.append(f"{name}: a line starts with punctuation: {line.strip()}")
    finally:
        i18n.use(None)
    assert not problems, f"{len(problems)} texts:\n" + "\n".join(dict.fromkeys(problems))


def test_one_mistake_costs_a_bounded_share_of_its_module(kit_grades):
    """Issue 28.1: a mistake costs the checks that test what it breaks, not every check that
    runs the broken code. Over the kit's mutants (tools/fairness.py, docs/fairness.md, from
    the grades above, graded once): the share of its module's points one mutant loses is at
    most MAX_SHARE outside the modules listed in OVER_MAX, and the median at most
    MEDIAN_KEPT."""
    spec = importlib.util.spec_from_file_location("fairness", ROOT / "tools" / "fairness.py")
    assert spec and spec.loader
    fairness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fairness)
    grades: dict[str, dict[str, list]] = {}
    for param in variants("mutants"):
        module, path = param.values
        grades.setdefault(module, {})[f"mutant {path.stem}"] = kit_grades(module, path)
    shares = fairness.mutant_shares(grades)
    over = {
        name: f"{share:.0%}"
        for name, share in shares.items()
        if share > fairness.MAX_SHARE
        and name.split("/")[0] not in fairness.OVER_MAX  # a module, or one mutant, with its reason
        and name not in fairness.OVER_MAX
    }
    assert not over, f"one mistake costs more than {fairness.MAX_SHARE:.0%} of its module: {over}"
    median = fairness.summary(shares)["median"]
    assert median <= fairness.MEDIAN_KEPT, f"the median mutant loses {median:.1%}"
