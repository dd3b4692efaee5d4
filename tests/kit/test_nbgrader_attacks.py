"""Issue 27's attacks in nbgrader's channel (`make autograde`), as notebooks.

One course (the attention assignment), one collect and ONE autograde run that grades every
attacker together with an honest student (the source notebook), then feedback and export:

    honest          the source notebook                            full marks
    <attack>        an attack of tests/kit/attacks/ as the first     0: no gain (the same
                    solution cell, the other solution cell empty:   notebook without the
                    seed_hunt, terminal_escapes, read_solutions,    attack scores 0)
                    read_kit, read_secrets, stored_answers
    poisoner        the solution, then three of test_batch.POISONS  no more than full marks,
                    that change its process at import: nn.Linear,    and the honest student
                    the kit's probe runner, a Tensor method          keeps full marks

The patched in-kernel grade (eve) is test_nbgrader.py's. A notebook's kernel runs the attack
too: the kernel's outcome is no grade, and what it prints reaches the feedback page, so the
feedback is checked for the seed and for control characters as well. The kernel runs
confined by the sandbox's jail (channels/nbgrader/kernel.py): read_kit, read_solutions and
read_secrets reach nothing of the instructor's kit from it, write_results writes nothing into
the kit's folders or the course.
"""

from __future__ import annotations

import csv
import json
import os
import re
import time
import unicodedata
from pathlib import Path

import nbformat
import pytest
from conftest import KIT, ROOT
from test_batch import POISONS
from test_nbgrader import ON_TIME, cell, max_points, read, text_of_html

from autograder.channels.nbgrader import autograde as course_judge
from autograder.channels.nbgrader import course
from autograder.core import course_config
from autograder.run.sandbox import jail

ASSIGNMENT = "attention"
ATTACKS = [
    "seed_hunt",
    "terminal_escapes",
    "read_solutions",
    "read_kit",
    "read_secrets",
    "stored_answers",
    "write_results",
]
POISONED = ["linear", "kit_class", "patch"]  # nn.Linear, a kit class's method, a Tensor method
POISONER = "poisoner"
HONEST = "honest"


def student_of(attack: str) -> str:
    return attack.replace("_", "")  # the collect pattern: <student>_<assignment>.ipynb


def attack_notebook(root: Path, attack: str):
    """The release with the attack's module as its first solution cell, the others empty."""
    nb = read(root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    text = (KIT / "attacks" / attack / f"{ASSIGNMENT}.py").read_text()
    solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    solutions[0].source = text
    for c in solutions[1:]:
        c.source = "# the attack's cell above defines everything"
    return nb


def poisoned_notebook(root: Path):
    """The source notebook (correct) whose first solution cell also poisons its process."""
    nb = read(root / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    first = cell(nb, "scaled_dot_product_attention")
    first.source += "\n\nimport torch\n" + "\n".join(POISONS[name] for name in POISONED) + "\n"
    return nb


def control_characters(text: str) -> set[str]:
    return {ch for ch in text if unicodedata.category(ch)[0] == "C"} - set("\n\t")


@pytest.fixture(scope="module")
def started() -> float:
    """When the module's autograde run began (what write_results wrote is newer)."""
    return time.time()


@pytest.fixture(scope="module")
def graded(tmp_path_factory, started):
    root = tmp_path_factory.mktemp("course")
    course.write_course(root, [ASSIGNMENT])
    course.release(root)
    downloads = {
        f"{HONEST}_{ASSIGNMENT}.ipynb": read(root / "source" / ASSIGNMENT / "attention.ipynb")
    }
    for attack in ATTACKS:
        downloads[f"{student_of(attack)}_{ASSIGNMENT}.ipynb"] = attack_notebook(root, attack)
    downloads[f"{POISONER}_{ASSIGNMENT}.ipynb"] = poisoned_notebook(root)
    archive = root / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    for name, nb in downloads.items():
        nbformat.write(nb, archive / name)
        os.utime(archive / name, (ON_TIME.timestamp(), ON_TIME.timestamp()))
    course.collect(root)
    summary = course.autograde(root)
    course.feedback(root)
    grades = course.export(root)
    with grades.open() as f:
        rows = {row["student_id"]: row for row in csv.DictReader(f)}
    return root, summary, rows, grades


def score(rows, student: str) -> float:
    return float(rows[student]["raw_score"])


def feedback_text(root: Path, student: str) -> str:
    return (root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()


def gradebook_comments(root: Path, student: str) -> list[str]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_judge.COURSE_ID) as gb:
        nb = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        return [c.auto_comment or "" for c in nb.comments]


def test_every_notebook_is_graded_and_the_honest_student_keeps_full_marks(graded):
    _, summary, rows, _ = graded
    everyone = {HONEST} | {student_of(a) for a in ATTACKS}
    everyone.add(POISONER)
    assert set(rows) == everyone and not summary["failed"], summary
    assert score(rows, HONEST) == max_points(ASSIGNMENT)


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_attack_gains_a_point_in_nbgrader(graded, attack):
    """The attack alone, as a notebook, scores what a notebook without it scores: 0; its
    kernel (unconfined, as nbgrader's is) decides nothing; nothing of the kit reaches it."""
    root, _, rows, _ = graded
    student = student_of(attack)
    assert score(rows, student) == 0.0, rows[student]
    assert float(rows[student]["score"]) == 0.0
    assert f"{course_judge.OFFICIAL}: {ASSIGNMENT}: " in feedback_text(root, student)
    official = " ".join(gradebook_comments(root, student))
    official += (root / "judged" / student / f"{ASSIGNMENT}.json").read_text()
    assert "KITLEAK" not in official, official[:2000]


def kernel_output(root: Path, student: str) -> str:
    """Everything the student's kernel printed or raised (the autograded notebook)."""
    nb = read(root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    return "\n".join(
        o.get("text", "") + o.get("evalue", "") for c in nb.cells for o in c.get("outputs", [])
    )


def test_the_kernels_run_confined_in_the_mode_the_sandbox_gets(graded):
    """make autograde says how the kernels ran: confined, in the mode jail.detect finds here
    (this machine: namespace as root; userns without root; uid without namespaces)."""
    _, summary, _, _ = graded
    mode = jail.detect([], need_cgroups=False).mode
    assert summary["kernels"][0].startswith(f"notebook kernels: confined ({mode}"), summary


def test_the_kernel_reaches_no_solution(graded):
    """read_kit's kernel opens what the student copy holds (its judge with the models left
    out, the public fixture), from the kernel's own view of the kit: never solutions/, and
    nothing of the instructor's kit itself; its feedback page says so."""
    root, _, _, _ = graded
    student = student_of("read_kit")
    feedback = text_of_html(root / "feedback" / student / ASSIGNMENT / "attention.html")
    opened = re.findall(r"KITLEAK opened (\S+)", kernel_output(root, student))
    assert opened, "the attack did not run in the kernel"
    assert not re.search(r"KITLEAK opened \S*solutions/attention\.py", feedback)
    for path in opened:
        assert "solutions" not in Path(path).parts and not path.startswith(str(ROOT)), path


def test_the_kernel_reads_no_secret(graded):
    """read_solutions and read_secrets in the kernel: no solutions/ folder of the machine
    is readable, the course's secret is in no environment or process it sees."""
    root, _, _, _ = graded
    secret = course_config.load(root).secret
    printed = kernel_output(root, student_of("read_secrets"))
    assert "LEAK env PATH" in printed, "the attack did not run in the kernel"
    assert secret not in printed
    assert not re.search(r"LEAK readable \S*solutions", printed), printed[-2000:]
    assert not re.search(r"LEAK readable \S*/\.git\b", printed)
    assert secret not in kernel_output(root, student_of("read_solutions"))


def test_write_results_leaves_the_kits_folders_and_the_course_untouched(graded, started):
    """write_results' kernel writes a full-marks results.json and grades.csv wherever a
    grader might read them: the working folder, build/, the kit's assignments/ (its __file__)
    and build/ of every folder above the kit. Confined, it wrote nothing there: its working
    folder was its own copy, the kit its read-only view."""
    root, _, _, _ = graded
    student = student_of("write_results")
    nb = read(root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    attack = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    assert attack.get("execution_count") and not any(
        o.get("output_type") == "error" for o in attack.get("outputs", [])
    ), "the attack's cell did not run in the kernel"
    folders = {ROOT, ROOT / "assignments", ROOT / "build", Path("/autograder/results")}
    folders |= {p / "build" for p in ROOT.parents}
    folders |= {root, root / "build", root / "autograded" / student / ASSIGNMENT}
    folders |= {root / "submitted" / student / ASSIGNMENT}
    full = json.dumps({"score": 1000})[:-1]  # the attack's results start with it
    for folder in folders:
        for name in ("results.json", "grades.csv", "write_results/results.json"):
            path = folder / name
            if not path.is_file() or path.stat().st_mtime < started:
                continue
            text = path.read_text(errors="replace")
            assert full not in text and "write_results,1000" not in text, path


def test_a_notebook_that_poisons_its_process_harms_no_classmate(graded):
    """nn.Linear.forward, the kit's probe runner, F.softmax's code, a Tensor method patched
    at import: the honest student graded in the same run keeps full marks (the test above)
    and the poisoner gains nothing over the correct notebook it started from."""
    _, _, rows, _ = graded
    assert score(rows, HONEST) == max_points(ASSIGNMENT)
    assert score(rows, POISONER) <= max_points(ASSIGNMENT)


def test_seed_hunt_finds_no_seed_in_the_kernel_or_the_sandbox(graded):
    """The hunt (frames, gc, /proc/self, descriptors) ran in the kernel and in the sandbox:
    what it printed reaches the feedback page and the judged record, never the seed."""
    root, _, _, _ = graded
    student = student_of("seed_hunt")
    seed = str(course_config.load(root).seed(student, ASSIGNMENT))
    kernel = read(root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    printed = "\n".join(
        o.get("text", "") + o.get("evalue", "") for c in kernel.cells for o in c.get("outputs", [])
    )
    assert "SEEDHUNT" in printed  # the hunt ran in the kernel
    judged = (root / "judged" / student / f"{ASSIGNMENT}.json").read_text()
    for text in (printed, feedback_text(root, student), judged, *gradebook_comments(root, student)):
        assert seed not in text


def test_no_control_character_reaches_the_gradebook_the_feedback_or_grades_csv(graded):
    """terminal_escapes prints and raises escape sequences, \\r, NUL and a bidi override:
    none reaches the gradebook's comments, the feedback page or grades.csv (read raw)."""
    root, _, rows, grades = graded
    student = student_of("terminal_escapes")
    for text in gradebook_comments(root, student):
        assert not control_characters(text), text[:300]
    for path in [grades, *(root / "feedback").rglob("*.html")]:
        raw = path.read_bytes().decode(errors="replace").replace("\r\n", "\n")
        assert not control_characters(raw), (path.relative_to(root), control_characters(raw))
    assert rows[student]["raw_score"] == "0"
