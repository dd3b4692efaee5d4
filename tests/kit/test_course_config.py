"""course/course.toml (due dates, late policy, point overrides, the hidden secret), the naming
rules of collection, and equations as Unicode: the fast parts, without nbgrader runs."""

from __future__ import annotations

import datetime as dt

import pytest

from autograder.channels.nbgrader import collect as course_collect
from autograder.channels.nbgrader import course
from autograder.core import course_config
from autograder.feedback.unicode_math import markdown, to_unicode


def config(tmp_path, text: str = "") -> course_config.CourseConfig:
    course_config.write(tmp_path, ["attention", "masks"])
    path = tmp_path / course_config.FILE
    base = path.read_text()
    for line in text.strip().splitlines():
        key = line.split("=")[0].strip()
        lines = [ln for ln in base.splitlines() if ln.split("=")[0].strip() != key]
        section = {"policy": "[late]", "per_day": "[late]", "attention": "[due]"}.get(key, "")
        if section:
            base = "\n".join(lines).replace(section, section + "\n" + line, 1)
        elif key.startswith('"'):
            base = "\n".join(lines).replace("[points]", "[points]\n" + line, 1)
    path.write_text(base)
    return course_config.load(tmp_path)


def test_written_once_with_a_fresh_secret_and_never_overwritten(tmp_path):
    first = config(tmp_path)
    assert len(first.secret) >= 40 and first.policy == "none" and first.due["attention"] is None
    course_config.write(tmp_path, ["attention"])
    assert course_config.load(tmp_path).secret == first.secret
    other = tmp_path / "other"
    assert course_config.write(other, ["attention"]) and config(other).secret != first.secret


def test_seeds_are_per_student_and_stable(tmp_path):
    c = config(tmp_path)
    assert c.seed("alice", "attention") == c.seed("alice", "attention")
    assert c.seed("alice", "attention") != c.seed("bob", "attention")
    assert c.seed("alice", "attention") != c.seed("alice", "masks")


def test_late_policies(tmp_path):
    due = dt.datetime(2026, 10, 1, 23, 59, tzinfo=dt.UTC)
    late = due + dt.timedelta(days=2, hours=1)  # three started days
    c = config(tmp_path, 'attention = "2026-10-01 23:59"\npolicy = "penalty"\nper_day = 0.2')
    assert c.due["attention"] == due
    assert c.penalty("attention", 10.0, late) == pytest.approx(6.0)
    assert c.penalty("attention", 10.0, due - dt.timedelta(minutes=1)) == 0.0
    assert c.penalty("masks", 10.0, late) == 0.0  # no due date
    c.per_day = 0.5
    assert c.penalty("attention", 10.0, late) == 10.0  # never more than the score
    c.policy = "zero"
    assert c.penalty("attention", 7.0, late) == 7.0
    c.policy = "none"
    assert c.penalty("attention", 7.0, late) == 0.0


@pytest.mark.parametrize(
    "text, message",
    [
        ('policy = "sometimes"', "expected one of none, zero, penalty"),
        ("per_day = 2", "expected a share of the score"),
        ('attention = "next tuesday"', "is not a date"),
        ('"attention.nope" = 3', "is not a check id"),
        ('"attention.reference" = -1', "expected points >= 0"),
    ],
)
def test_bad_settings_are_named(tmp_path, text, message):
    with pytest.raises(course_config.ConfigError, match=message):
        config(tmp_path, text)


def test_point_overrides_reach_the_notebook_cells(tmp_path):
    c = config(tmp_path, '"attention.reference" = 7')
    nb = course.notebook("attention", points=c.points)
    cell = next(
        x for x in nb.cells if x.metadata.get("nbgrader", {}).get("grade_id") == "test-reference"
    )
    assert cell.metadata["nbgrader"]["points"] == 7


@pytest.mark.parametrize(
    "name, cleaned, late, number",
    [
        ("LATE_carol_masks-1.ipynb", "carol_masks.ipynb", True, 1),
        ("smithjohn_LATE_123_456_attention-2.ipynb", "smithjohn_123_456_attention.ipynb", True, 2),
        ("dave_attention (3).ipynb", "dave_attention.ipynb", False, 3),
        ("eve_attention.ipynb", "eve_attention.ipynb", False, 0),
    ],
)
def test_download_names_lose_late_marks_and_resubmission_suffixes(name, cleaned, late, number):
    assert course_collect._clean(name) == (cleaned, late, number)


def test_metadata_names_the_assignment_only_when_unambiguous():
    known = {"attention": {"setup", "a1", "a2", "a3"}, "masks": {"setup", "m1", "m2"}}

    class Cell:
        def __init__(self, grade_id):
            self.metadata = {"nbgrader": {"grade_id": grade_id}}

    class Nb:
        def __init__(self, *ids):
            self.cells = [Cell(i) for i in ids]

    assert course_collect.by_metadata(Nb("setup", "m1", "m2"), known) == ("masks", "")
    assert course_collect.by_metadata(Nb("setup"), known)[0] == ""  # fits both equally
    assert course_collect.by_metadata(Nb("x", "y"), known)[0] == ""  # fits none
    assert course_collect._student_from("carol_masks_final", "masks") == "carol"
    assert course_collect._student_from("mystery", "masks") == ""


def test_equations_become_unicode():
    assert to_unicode(r"\frac{Q K^\top}{\sqrt{d_k}}") == "(Q Kᵀ)/√dₖ"
    assert to_unicode(r"w_{ij} \in \mathbb{R}^{L \times S}") == "wᵢⱼ ∈ ℝ^(L × S)"
    text = markdown("Scale by $1/\\sqrt{d_k}$, not `$HOME`.\n\n$$\n\\sigma^2\n$$")
    assert "$" not in text.replace("`$HOME`", "") and "√dₖ" in text and "σ²" in text
