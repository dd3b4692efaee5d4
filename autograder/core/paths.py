"""Where the kit's files are: one place, so no module computes the root on its own."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parent
SOLUTIONS = ROOT / "solutions"
ASSIGNMENTS = ROOT / "assignments"
FIXTURES = PACKAGE / "fixtures"
CHECKS = PACKAGE / "checks"
TRUSTED = PACKAGE / "trusted"
TESTS = ROOT / "tests"
GRADED_SUITES = TESTS / "graded"
KIT_TESTS = TESTS / "kit"
COURSE_TEXT = ROOT / "course" / "text"
# the default course's settings: its [limits] apply to every channel alike (settings.py)
COURSE_TOML = ROOT / "course" / "course.toml"
DOCS = ROOT / "docs"
BUILD = ROOT / "build"
# What a grading server (Gradescope's autograder.zip, PrairieLearn's course) gets of the kit:
# the package, the solutions (the hidden tier's references) and data/ (the training checks'
# corpus, read before any student code runs).
SHIPPED_TO_SERVERS = ("autograder", "solutions", "data")
