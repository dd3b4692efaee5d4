"""A difference no misconception names ("wrong-values") is hinted in each exercise's own words.

Each exercise has its own three-level ladder (checks/<module>/wrong_values.toml): every level
speaks of that exercise's computation, never of another module's (the generic ladder once
spoke of scores, scaling, mask and softmax to a student writing layer_norm); level 3 is at
least as specific as level 2; no level points to numbered TODO steps the exercise's stub
does not have.
"""

from __future__ import annotations

import ast
import re
from functools import cache

import pytest

from autograder.core import check as core
from autograder.core import i18n, misconception_data, paths, registry

# Each module's distinctive vocabulary: terms of its own computation that no module it does
# not build on has reason to use. Matched case-insensitively at the start of a word; each term
# must occur in its own module's ladders (the lists describe the ladders as written).
DISTINCTIVE = {
    "attention": ("softmax", "scores", "√d_k"),
    "masks": ("padding", "lengths[b]", "triu"),
    "multihead": ("split_heads", "merge_heads"),
    "positional": ("sinusoid", "even columns"),
    "blocks": ("layernorm", "variance", "gelu", "pre-ln", "post-ln"),
    "modern_blocks": ("rms", "silu", "swiglu"),
    "diagnostics": ("recall_batch", "xlogy", "log n", "mse_loss"),
    "gpt": ("temperature", "top_k", "multinomial", "adamw"),
    "plots": ("imshow", "colour", "subplots"),
    "efficient": ("elu", "chunk", "stride", "cumsum"),
    "rotary": ("rotary", "apply_rotary", "θ_i"),
    "gqa": ("repeat_kv", "n_rep", "num_kv_heads", "h_kv"),
    "kvcache": ("p0", "prefill", "kvcache", "cache.length"),
    "llama": ("rotaryattention", "attn_norm", "ffn_norm"),
    "mla": ("latent", "c_kv", "absorbed", "d_rope", "w_uk"),
    "induction": ("induction", "previous-token", "repeated half", "period"),
    "flash": ("log-sum-exp", "lse", "block_q", "save_for_backward"),
}
# A module may speak of what its stub imports (it builds on it), and of these, with a reason.
ALSO = {
    ("gpt", "attention"): "generate samples from a softmax of the logits",
    ("diagnostics", "attention"): "softmax_saturation computes scaled scores and their softmax",
}
# What the one generic ladder said to every exercise before it had its own (issue 28).
OLD_GENERIC = (
    "Take each step of the equation in turn (scores, scaling, mask, softmax, weighted sum) "
    "and check which axis and which operation each uses."
)
NUMBERED = re.compile(r"numbered|\bsteps? \d|\bTODO\b", re.IGNORECASE)
# What makes a text code rather than words: a call, an attribute, an argument, an index, an
# operator between names.
CODE = re.compile(r"\w\(|\w\.\w|\w=|\[[^\]]*\]|@|\*\*|//|\w \* \w|\w / \w")


def _term(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(term), re.IGNORECASE)


@cache
def _builds_on(module: str) -> frozenset[str]:
    """The modules whose names `module`'s stub imports (`from .attention import ...`)."""
    tree = ast.parse((paths.ROOT / "assignments" / f"{module}.py").read_text(encoding="utf-8"))
    return frozenset(
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    )


def _exercises() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for check in registry.all_checks():
        found.setdefault((check.module, check.exercise), []).append(check.slug)
    return found


def foreign_terms(module: str, text: str) -> list[tuple[str, str]]:
    """(other module, term) of each distinctive term of a module that `module` neither is,
    nor builds on, nor is allowed (ALSO) to speak of, found in `text`."""
    return [
        (other, term)
        for other, terms in DISTINCTIVE.items()
        if other != module and other not in _builds_on(module) and (module, other) not in ALSO
        for term in terms
        if _term(term).search(text)
    ]


@pytest.mark.fast
def test_every_exercise_has_its_own_ladder():
    missing = []
    for module, exercise in _exercises():
        own = misconception_data.own_ladder(core.WRONG_VALUES, module, exercise)
        if own.hints == core.WRONG_VALUES.hints:
            missing.append(f"{module}: [{exercise}]")
    assert not missing, (
        "exercises with no wrong-values ladder in checks/<module>/wrong_values.toml: "
        + ", ".join(missing)
    )
    for module in registry.modules():  # and no ladder for an exercise no check grades
        graded = {e for m, e in _exercises() if m == module}
        extra = set(misconception_data.ladders(module)) - graded
        assert not extra, f"checks/{module}/wrong_values.toml: no check grades {sorted(extra)}"


@pytest.mark.fast
def test_a_ladder_speaks_of_no_other_modules_computation():
    assert set(DISTINCTIVE) == set(registry.modules()), "a module without its vocabulary"
    problems = []
    for module in registry.modules():
        texts = " ".join(t for hints in misconception_data.ladders(module).values() for t in hints)
        for term in DISTINCTIVE[module]:  # the lists describe the ladders as written
            if not _term(term).search(texts):
                problems.append(f"{module}: its own term {term!r} is in none of its ladders")
        for exercise, hints in misconception_data.ladders(module).items():
            for level, text in enumerate(hints, 1):
                for other, term in foreign_terms(module, text):
                    problems.append(f"{module} [{exercise}] level {level}: {other}'s {term!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.fast
def test_the_vocabulary_check_can_fail():
    """The old generic ladder, read to a layer_norm student, speaks of attention."""
    assert ("attention", "scores") in foreign_terms("blocks", OLD_GENERIC)
    assert ("attention", "softmax") in foreign_terms("positional", OLD_GENERIC)
    assert not foreign_terms("multihead", OLD_GENERIC)  # it builds on attention
    for text in core.WRONG_VALUES.hints:  # the fallback speaks of no module at all
        assert not [t for ts in DISTINCTIVE.values() for t in ts if _term(t).search(text)]


@pytest.mark.fast
def test_level_3_is_at_least_as_specific_as_level_2():
    """Level 3 (nearly the code) holds at least as much code as level 2 (the operations),
    and some."""
    problems = []
    for module in registry.modules():
        for exercise, (_idea, operation, code) in misconception_data.ladders(module).items():
            two, three = len(CODE.findall(operation)), len(CODE.findall(code))
            if three < max(two, 1):
                problems.append(f"{module} [{exercise}]: level 3 {three} code terms, level 2 {two}")
    assert not problems, "\n".join(problems)


@pytest.mark.fast
def test_no_ladder_points_to_numbered_steps_its_stub_lacks():
    problems = []
    for module in registry.modules():
        stub = (paths.ROOT / "assignments" / f"{module}.py").read_text(encoding="utf-8")
        for exercise, hints in misconception_data.ladders(module).items():
            if not any(NUMBERED.search(h) for h in hints):
                continue
            name = exercise.split(".")[-1]
            todo = re.search(rf"# TODO \({re.escape(name)}\).*?\n((?:\s*#.*\n)*)", stub)
            if not todo or not re.search(r"#\s+\d[.)]", todo.group(1)):
                problems.append(f"{module} [{exercise}] points to TODO steps its stub lacks")
    assert not problems, "\n".join(problems)


class _Check:
    id, name, module, points, exercise = "blocks.layer-norm", "blocks: x", "blocks", 1.0, ""


@pytest.mark.fast
def test_the_feedback_shows_the_exercises_own_ladder():
    """Result.of keeps level 3 of the exercise's ladder as the English hint, and the display
    (i18n: the table, make hint, the report) words every level from it, in English and in
    Chinese."""
    check = registry.find("blocks.layer-norm")
    failure = core.Failure(core.WRONG_VALUES, what="y", err=1.0, index=(0,), got=1.0, want=0.0)
    own = misconception_data.ladders("blocks")["layer_norm"]
    result = core.Result.of(check, "failed", failure)
    assert result.hint == own[2].format() and "scores" not in result.hint
    assert i18n.misconception_of(result).hints == own
    lines = i18n.hint_lines(result, (1, 2, 3))
    assert [line.split(": ", 1)[1] for line in lines] == [h.format() for h in own]
    try:
        i18n.use("zh_CN")
        chinese = i18n.hint_lines(result, (1, 2, 3))
    finally:
        i18n.use(None)
    assert "LayerNorm 对每个向量单独" in chinese[0] and "注意力分数" not in "".join(chinese)
    # a check of no exercise keeps the kit's own ladder
    assert core.Result.of(_Check(), "failed", failure).hint == core.WRONG_VALUES.hints[2]


@pytest.mark.fast
def test_every_ladder_and_phrase_has_a_chinese_translation():
    """The ladders (checks-<module>.po) and the detail phrases (phrases.py, kit.po) are
    translated, with the same placeholders."""
    from test_i18n import _problem, _zh_entries

    from autograder.core.phrases import PHRASES

    entries = _zh_entries()
    texts = [
        t for m in registry.modules() for h in misconception_data.ladders(m).values() for t in h
    ]
    problems = [
        f"{problem}: {text[:70]!r}"
        for text in [*texts, *PHRASES]
        if (problem := _problem(text, entries.get(text)))
    ]
    assert not problems, f"{len(problems)} texts:\n" + "\n".join(problems[:20])
