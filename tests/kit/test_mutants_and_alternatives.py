"""Every mutant loses points with its own misconception; every alternative gets full marks."""

import pytest
from conftest import (
    declared_losses,
    expected_misconception,
    grade_folder,
    submission_with,
    variants,
)

from autograder.core.registry import all_misconceptions


@pytest.mark.parametrize(("module", "path"), variants("mutants"))
def test_mutant_loses_points_with_its_misconception(module, path, tmp_path):
    expected = expected_misconception(path)
    assert expected in all_misconceptions(), f"{path.name} expects an undeclared id {expected}"
    folder = submission_with(tmp_path, {module: path.read_text()})
    results = grade_folder(folder, [module])
    lost = [r for r in results if not r.passed]
    assert lost, f"mutant {path.name} got full marks"
    named = {r.misconception for r in lost}
    assert expected in named, f"{path.name}: expected [{expected}], the grader said {named}"
    assert "grader-error" not in named and "crash" not in named
    charged = declared_losses(path)
    if charged is not None:  # each difference is charged once, where its check names it
        lost_slugs = {r.check_id.split(".", 1)[1] for r in lost}
        assert lost_slugs == charged, (
            f"{path.name} lost {sorted(lost_slugs)}, not {sorted(charged)}"
        )


@pytest.mark.parametrize(("module", "path"), variants("alternatives"))
def test_alternative_gets_full_marks(module, path, tmp_path):
    folder = submission_with(tmp_path, {module: path.read_text()})
    results = grade_folder(folder, [module])
    failed = [(r.check_id, r.misconception, r.message) for r in results if not r.passed]
    assert not failed, f"alternative {path.name} lost points: {failed}"


def test_enough_variants_per_module():
    mutants, alternatives = variants("mutants"), variants("alternatives")
    assert len([m for m in mutants if m.values[0] in ("attention", "masks")]) >= 12
    assert len([a for a in alternatives if a.values[0] in ("attention", "masks")]) >= 5
