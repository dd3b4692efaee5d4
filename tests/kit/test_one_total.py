"""One total per module in every channel (issue 25; autograder/feedback/sinks.py).

The solutions and one mutant (gpt's generate without clamping top_k to V) are graded through
every channel this machine has: make grade-train (the pytest plugin, training runs included),
batch, Gradescope's entry point and PrairieLearn's (each on a simulated root, in process), and
nbgrader's judge (course_judge, writing a real gradebook). Each channel's maximum per module
is the module's one total, sinks.module_max (every check, the training runs included), and
each module's score is the same in every channel. gpt and llama: the modules with training
checks, where nbgrader once counted 25 and 17 points and every other channel 21 and 13.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import SOLUTIONS, grade_cli
from nbgrader.api import Gradebook

from autograder.channels import batch, gradescope, prairielearn
from autograder.channels.nbgrader import autograde as course_judge
from autograder.channels.nbgrader import course
from autograder.channels.nbgrader import export as course_export
from autograder.core import course_config
from autograder.feedback import sinks

MODULES = ["gpt", "llama"]
STUDENTS = ["alice", "bob"]  # alice: the solutions; bob: the mutant
MUTATION = ("k = min(top_k, logits.size(-1))", "k = top_k")  # gen-topk-not-clamped
SEED = 20261202

Totals = dict[str, dict[str, tuple[float, float]]]  # {student: {module: (score, max)}}


def mutated(text: str) -> str:
    assert MUTATION[0] in text
    return text.replace(*MUTATION)


def by_module(tests: list[dict], score: str = "score", most: str = "max_score") -> dict:
    found: dict[str, tuple[float, float]] = {}
    for t in tests:
        module = t["name"].split(": ", 1)[0]
        got, top = found.get(module, (0.0, 0.0))
        found[module] = (got + t[score], top + t[most])
    return found


@pytest.fixture(scope="module")
def submissions(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("submissions")
    for name in STUDENTS:
        shutil.copytree(SOLUTIONS, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    gpt = root / "bob" / "gpt.py"
    gpt.write_text(mutated(gpt.read_text()))
    return root


# --------------------------------------------------------------------------- the channels


def make_grade(submissions: Path, tmp: Path) -> Totals:
    """make grade-train: the plugin with the training runs (build/results.json)."""
    totals = {}
    for name in STUDENTS:
        ex = ("--ex", ",".join(MODULES), "--include-slow")
        proc, data = grade_cli(submissions / name, tmp / name, *ex)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        totals[name] = by_module(data["tests"])
        modules = data["extra_data"]["modules"]
        assert {m: (v["score"], v["max_score"]) for m, v in modules.items()} == totals[name]
    return totals


def make_batch(submissions: Path, tmp: Path) -> Totals:
    """make batch: grades.csv's per-module scores, each student's results.json's maximum."""
    graded = batch.run(submissions, tmp / "out", modules=MODULES, seed=SEED, progress=False)
    assert sorted(g.name for g in graded) == STUDENTS
    with open(tmp / "out" / "grades.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    totals = {}
    for name in STUDENTS:
        data = json.loads((tmp / "out" / name / "results.json").read_text())
        totals[name] = by_module(data["tests"])
        assert {m: float(rows[name][m]) for m in MODULES} == {
            m: totals[name][m][0] for m in MODULES
        }
        assert float(rows[name]["max_score"]) == sum(top for _, top in totals[name].values())
    return totals


def make_gradescope(submissions: Path, tmp: Path) -> Totals:
    """Gradescope's entry point (gradescope-run) on a simulated /autograder root."""
    totals = {}
    for name in STUDENTS:
        root = tmp / name
        (root / "source").mkdir(parents=True)
        config = {"modules": MODULES, "lang": ""}
        (root / "source" / gradescope.CONFIG).write_text(json.dumps(config))
        shutil.copytree(submissions / name, root / "submission")
        assert gradescope.run(root) == 0
        data = json.loads((root / "results" / "results.json").read_text())
        assert data["score"] == sum(t["score"] for t in data["tests"])
        totals[name] = by_module(data["tests"])
    return totals


def make_prairielearn(submissions: Path, tmp: Path) -> Totals:
    """PrairieLearn's entry point (prairielearn-run) on a simulated /grade root per question;
    the course's question points too."""
    built = prairielearn.build(tmp / "course", MODULES)
    homework = built / "courseInstances" / "Default" / "assessments" / "homework"
    zones = json.loads((homework / "infoAssessment.json").read_text())["zones"]
    points = {q["id"]: q["autoPoints"] for q in zones[0]["questions"]}
    totals: Totals = {name: {} for name in STUDENTS}
    for module in MODULES:
        assert points[f"attention-lab-{module}"] == sinks.module_max(module)
        for name in STUDENTS:
            root = tmp / f"{name}-{module}"
            question = built / "questions" / f"attention-lab-{module}"
            shutil.copytree(question / "tests", root / "tests")
            (root / "serverFilesCourse" / prairielearn.KIT).mkdir(parents=True)
            secret = built / "serverFilesCourse" / prairielearn.KIT / "secret.json"
            shutil.copy(secret, root / "serverFilesCourse" / prairielearn.KIT / "secret.json")
            (root / "student").mkdir()
            shutil.copy(submissions / name / f"{module}.py", root / "student")
            assert prairielearn.run(root) == 0
            data = json.loads((root / "results" / "results.json").read_text())
            assert data["gradable"] is True, data
            (module_totals,) = by_module(data["tests"], "points", "max_points").items()
            assert module_totals[0] == module
            totals[name][module] = module_totals[1]
            score, top = module_totals[1]
            assert data["score"] == pytest.approx(score / top)
    return totals


def make_gradebook(root: Path) -> None:
    """The gradebook `nbgrader generate_assignment` and `collect` would leave: each module's
    grade cells from the course's notebook, and a submission of each student. (nbgrader
    makes a new gradebook with alembic's command, found on PATH: the venv's.)"""
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = course.kernel_env(root)["PATH"]
    try:
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_judge.COURSE_ID) as gb:
            for module in MODULES:
                gb.update_or_create_assignment(module)
                gb.update_or_create_notebook(module, module)
                nb = nbformat.read(root / "source" / module / f"{module}.ipynb", as_version=4)
                for c in nb.cells:
                    meta = c.metadata.get("nbgrader", {})
                    if meta.get("grade"):
                        gb.update_or_create_grade_cell(
                            meta["grade_id"],
                            module,
                            module,
                            max_score=meta["points"],
                            cell_type=c.cell_type,
                        )
            for name in STUDENTS:
                gb.update_or_create_student(name)
                for module in MODULES:
                    gb.add_submission(module, name)
    finally:
        os.environ["PATH"] = saved


def make_nbgrader(submissions: Path, tmp: Path) -> Totals:
    """nbgrader: the course's notebooks' grade cells in a real gradebook (as `nbgrader
    generate_assignment` records them, without its minute of notebook conversion), each
    student's notebook judged outside the kernel (course_judge) and recorded; the export's
    rows."""
    root = tmp / "course"
    course.write_course(root, MODULES)
    config = course_config.load(root)
    make_gradebook(root)
    for module in MODULES:
        for name in STUDENTS:
            nb = nbformat.read(root / "source" / module / f"{module}.ipynb", as_version=4)
            if (name, module) == ("bob", "gpt"):
                for c in nb.cells:
                    if MUTATION[0] in c.source:
                        c.source = mutated(c.source)
            path = root / "autograded" / name / module / f"{module}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(nb, path)
        judged = course_judge.judge_assignment(root, config, module, STUDENTS)
        course_judge.record(root, config, judged)
        # what the gradebook recorded as each student's maximum: the module's one total
        assert [j.max_score for j in judged] == [sinks.module_max(module)] * len(STUDENTS)
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_judge.COURSE_ID) as gb:
            assert gb.find_assignment(module).max_score == sinks.module_max(module)
    totals: Totals = {name: {} for name in STUDENTS}
    for row in course_export.rows(root):
        totals[row["student_id"]][row["assignment"]] = (
            float(row["raw_score"]),
            float(row["max_score"]),
        )
    return totals


CHANNELS = {
    "make grade-train": make_grade,
    "batch": make_batch,
    "gradescope": make_gradescope,
    "prairielearn": make_prairielearn,
    "nbgrader": make_nbgrader,
}


# nbgrader's own add_submission warns about its session (SQLAlchemy); not the kit's
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture(scope="module")
def graded(submissions, tmp_path_factory):
    """Each channel's totals, graded once (a channel's failure is its test's failure)."""
    cache: dict[str, Totals] = {}

    def of(channel: str) -> Totals:
        if channel not in cache:
            cache[channel] = CHANNELS[channel](submissions, tmp_path_factory.mktemp(channel))
        return cache[channel]

    return of


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_every_channel_counts_each_module_at_its_one_total(graded, channel):
    totals = graded(channel)
    for name in STUDENTS:
        assert set(totals[name]) == set(MODULES), (channel, name)
        for module in MODULES:
            assert totals[name][module][1] == sinks.module_max(module), (channel, name, module)
    assert all(score == top for score, top in totals["alice"].values()), totals["alice"]
    gpt_score, gpt_max = totals["bob"]["gpt"]
    assert 0 < gpt_score < gpt_max and totals["bob"]["llama"] == totals["alice"]["llama"]


@pytest.mark.parametrize("channel", [c for c in CHANNELS if c != "make grade-train"])
def test_every_channel_gives_each_module_the_same_score(graded, channel):
    """The mutant's gpt loses the same points in every channel as in make grade-train."""
    assert graded(channel) == graded("make grade-train")


def test_module_max_counts_every_check_the_training_runs_included():
    from autograder.core import registry

    for module in MODULES:
        checks = registry.checks_of(module)
        assert any(c.slow for c in checks), module
        assert sinks.module_max(module) == sum(c.points for c in checks)
