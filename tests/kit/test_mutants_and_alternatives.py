"""Every mutant loses points with its own misconception; every alternative gets full marks.

Each variant is graded once, public tier, with the engine of `make grade` (run.engine.grade on
a copy of solutions/ with the variant in place of its module): the grading `make dist` does
while it records the judges' models (autograder/core/model_replays.py), whose record of what
each variant lost ([check slug, mistake id]) is cached in build/model-replays/ and stamped
with the hash of everything it depends on (the engine, the module's judges, solutions/, the
variants, the fixtures, torch). Where a module's record is missing or stale, the stale modules
are recorded now, as `make dist` records them; make test's student copy and
tools/student_copy_check.py use the same record.
"""

import importlib.util

import pytest
from conftest import ROOT, declared_losses, expected_misconception, variants

from autograder.core import model_replays, paths, syllabus
from autograder.core.registry import all_misconceptions

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
        if share > fairness.MAX_SHARE and name.split("/")[0] not in fairness.OVER_MAX
    }
    assert not over, f"one mistake costs more than {fairness.MAX_SHARE:.0%} of its module: {over}"
    median = fairness.summary(shares)["median"]
    assert median <= fairness.MEDIAN_KEPT, f"the median mutant loses {median:.1%}"
