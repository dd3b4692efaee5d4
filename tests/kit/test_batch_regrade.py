"""Regrades in batch mode: a subset updates its rows of grades.csv and reuses the recorded
hidden seed (SEED=... sets one); a module file not handed in reads "missing", not 0."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

from conftest import KIT, SOLUTIONS, run_cli

MODULES = "attention,masks"


def batch(submissions: Path, out: Path, *extra: str):
    proc = run_cli(
        "batch", "--submissions", str(submissions), "--out", str(out), "--ex", MODULES, *extra
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def grades(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def seed_of(out: Path) -> int:
    return json.loads((out / "batch.json").read_text())["seed"]


def test_regrading_one_student_updates_its_row_and_reuses_the_seed(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(SOLUTIONS, subs / "alice", ignore=ignore)
    (subs / "bob").mkdir()  # bob hands in a buggy attention.py and no masks.py
    mutant = (KIT / "mutants" / "attention" / "no_scaling.py").read_text()
    mutant = re.sub(r"^from solutions\.\w+ import .*$", "", mutant, flags=re.M)
    (subs / "bob" / "attention.py").write_text((SOLUTIONS / "attention.py").read_text() + mutant)
    batch(subs, out, "--seed", "4242")
    first = grades(out)
    assert seed_of(out) == 4242  # SEED=... sets the hidden seed
    assert first["bob"]["masks"] == "missing" and first["alice"]["masks"] != "missing"
    assert float(first["bob"]["attention"]) < float(first["alice"]["attention"])

    # Bob fixes his work; only he is graded again, on the recorded seed.
    shutil.rmtree(subs / "bob")
    shutil.copytree(SOLUTIONS, subs / "bob", ignore=ignore)
    proc = batch(subs, out, "--student", "bob")
    assert "reusing the hidden seed" in proc.stderr
    assert seed_of(out) == 4242
    second = grades(out)
    assert second["alice"] == first["alice"]  # untouched
    assert second["bob"]["score"] == second["bob"]["max_score"] == first["alice"]["max_score"]

    proc = run_cli("batch", "--submissions", str(subs), "--out", str(out), "--student", "zed")
    assert proc.returncode == 2 and "STUDENT='zed' has no submission" in proc.stderr


def seeds_of(out: Path) -> dict[str, str]:
    with open(out / "seeds.csv") as f:
        return {row["student"]: row["seed"] for row in csv.DictReader(f)}


def test_regrading_one_student_reuses_their_own_seed(tmp_path):
    """Without --seed each student has their own hidden seed (course.toml's secret and the
    student id): a regrade of one derives the same seed and keeps the others' rows."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    for name in ("alice", "bob"):
        (subs / name).mkdir()
        shutil.copy(SOLUTIONS / "masks.py", subs / name / "masks.py")
    first = run_cli("batch", "--submissions", str(subs), "--out", str(out), "--ex", "masks")
    assert first.returncode == 0, first.stderr[-3000:]
    seeds = seeds_of(out)
    assert set(seeds) == {"alice", "bob"} and seeds["alice"] != seeds["bob"]
    again = run_cli(
        "batch", "--submissions", str(subs), "--out", str(out), "--ex", "masks", "--student", "bob"
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert seeds_of(out) == seeds
    assert grades(out)["bob"]["score"] == grades(out)["bob"]["max_score"]
