"""Course records without nbgrader runs: learning platforms' download names (Canvas, Moodle,
Blackboard), the roster checked at collect, and make batch's names for such downloads. The
whole cycle (records, stale grades, make regrade ALL=1, canvas.csv) is in test_nbgrader.py."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import zipfile

import nbformat
import pytest

from autograder.channels import batch, lms
from autograder.channels.nbgrader import collect as course_collect
from autograder.channels.nbgrader import course
from autograder.core import course_config


@pytest.mark.fast
@pytest.mark.parametrize(
    "name, platform, who, user_id, file, late, number",
    [
        ("judy_LATE_123456_7891011_masks.ipynb", "canvas", "judy", "123456", "masks.ipynb",
         True, 0),
        ("smithjohn_123456_7891011_masks.ipynb", "canvas", "smithjohn", "123456",
         "masks.ipynb", False, 0),
        ("smithjohn_late_42_43_masks-2.ipynb", "canvas", "smithjohn", "42", "masks.ipynb",
         True, 2),
        ("van_der_berg_7_8_my_masks-1.zip", "canvas", "van_der_berg", "7", "my_masks.zip",
         False, 1),
        ("John Smith_4321_assignsubmission_file_masks.ipynb", "moodle", "John Smith", "4321",
         "masks.ipynb", False, 0),
        ("John Smith_4321_assignsubmission_file_", "moodle", "John Smith", "4321", "", False, 0),
        ("Masks_jsmith_attempt_2026-10-01-23-59-07_masks.ipynb", "blackboard", "jsmith", "",
         "masks.ipynb", False, 0),
    ],
)  # fmt: skip
def test_learning_platforms_names_are_read(name, platform, who, user_id, file, late, number):
    download = lms.parse(name)
    assert download is not None
    assert (download.platform, download.who, download.user_id, download.file) == (
        platform,
        who,
        user_id,
        file,
    )
    assert (download.late, download.resubmission) == (late, number)


@pytest.mark.fast
def test_other_names_are_no_platforms_and_blackboard_gives_the_attempt_time():
    for name in ("alice_attention.ipynb", "LATE_dave_attention-1.ipynb", "carol.zip", "bob"):
        assert lms.parse(name) is None, name
    attempt = lms.parse("Week 3_Masks_jsmith_attempt_2026-10-01-23-59-07_masks.ipynb")
    assert attempt and attempt.when == dt.datetime(2026, 10, 1, 23, 59, 7, tzinfo=dt.UTC)
    assert lms.name_keys("Smith, John") == lms.name_keys("John Smith") >= {"smithjohn"}


@pytest.mark.fast
def test_the_roster_resolves_ids_names_and_aliases_and_names_what_it_lacks(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(
        "ID,Name,E-mail,Canvas ID,moodle_id,username,aliases\n"
        "s1,Judy Hopps,judy@uni.edu,123456,,,\n"
        's2,"Smith, John",,,4321,jsmith,johnny;js\n'
        "s3,Ann Lee,,,,,\n"
        "s4,Ann Lee,,,,,\n"
    )
    roster = lms.read_csv(path)
    assert roster.resolve(lms.parse("whoever_123456_1_masks.ipynb")) == ("s1", "")  # Canvas id
    assert roster.resolve(lms.parse("smithjohn_9_1_masks.ipynb")) == ("s2", "")  # Canvas name
    assert roster.resolve(lms.parse("J S_4321_assignsubmission_file_x.ipynb")) == ("s2", "")
    assert roster.resolve(lms.parse("M_jsmith_attempt_2026-10-01-23-59-07_x.ipynb"))[0] == "s2"
    assert roster.resolve(None, "johnny") == ("s2", "") == roster.resolve(None, "S2")
    assert roster.resolve(None, "judy") == ("s1", "")  # the e-mail's local part
    student, why = roster.resolve(lms.parse("leeann_5_6_x.ipynb"))
    assert not student and "fits 2 students of the roster (s3, s4)" in why
    student, why = roster.resolve(lms.parse("nobody_77_6_x.ipynb"))
    assert not student and why == f"nobody (Canvas user 77) is not in the roster ({path})"
    path.write_text("name,email\nJudy,j@x\n")
    with pytest.raises(lms.RosterError, match="names no `id` column"):
        lms.read_csv(path)
    path.write_text("id\na\na\n")
    with pytest.raises(lms.RosterError, match="line 3: student id 'a' twice"):
        lms.read_csv(path)


@pytest.fixture(scope="module")
def masks_course(tmp_path_factory):
    """A course folder with the masks assignment's source notebook, and that notebook."""
    root = tmp_path_factory.mktemp("course")
    nb = course.notebook("masks")
    (root / "source" / "masks").mkdir(parents=True)
    nbformat.write(nb, root / "source" / "masks" / "masks.ipynb")
    course_config.write(root, ["masks"])
    return root, nb


def _downloads(root, nb):
    archive = root / "downloaded" / "masks" / "archive"
    archive.mkdir(parents=True)
    names = [
        "judy_LATE_123456_7891011_masks.ipynb",  # Canvas, late
        "smithjohn_222_332_masks.ipynb",  # Canvas, then a re-upload:
        "smithjohn_222_333_masks-1.ipynb",
        "Mary Major_99_assignsubmission_file_masks.ipynb",  # Moodle, a file
        "Masks_ann_attempt_2026-09-30-10-00-00_masks (2).ipynb",  # Blackboard
    ]
    for name in names:
        nbformat.write(nb, archive / name)
    folder = archive / "John Doe_4321_assignsubmission_file_"  # Moodle, a folder
    folder.mkdir()
    nbformat.write(nb, folder / "my work.ipynb")
    with zipfile.ZipFile(archive / "leeann_5_6_submission.zip", "w") as z:  # Canvas, a .zip
        z.writestr("Untitled.ipynb", nbformat.writes(nb))
    (archive / "Masks_ann_attempt_2026-09-30-10-00-00.txt").write_text("Blackboard's summary")
    return archive


def test_collect_reads_platforms_names_and_checks_the_roster(masks_course, tmp_path):
    source, nb = masks_course
    root = tmp_path / "course"
    root.mkdir()
    for name in ("source", course_config.FILE):
        os.symlink(source / name, root / name)
    _downloads(root, nb)
    config = course_config.load(root)

    # Without a roster: the platforms' names are the ids; no phantom "judy_LATE_123456_..."
    items = {
        i.source.split("/archive/")[1]: i for i in course_collect.collect(root, config, ["masks"])
    }
    who = {k: (i.action, i.student) for k, i in items.items()}
    assert who["judy_LATE_123456_7891011_masks.ipynb"] == ("collected", "judy")
    assert items["judy_LATE_123456_7891011_masks.ipynb"].late_mark
    assert who["smithjohn_222_333_masks-1.ipynb"] == ("collected", "smithjohn")
    assert who["smithjohn_222_332_masks.ipynb"][0] == "superseded"
    assert who["Mary Major_99_assignsubmission_file_masks.ipynb"] == ("collected", "Mary_Major")
    assert who["John Doe_4321_assignsubmission_file_/my work.ipynb"] == ("mapped", "John_Doe")
    blackboard = items["Masks_ann_attempt_2026-09-30-10-00-00_masks (2).ipynb"]
    assert (blackboard.action, blackboard.student) == ("collected", "ann")
    assert blackboard.timestamp == "2026-09-30T10:00:00+00:00"  # the attempt's time
    assert who["leeann_5_6_submission.zip:Untitled.ipynb"] == ("mapped", "leeann")
    assert sorted(p.name for p in (root / "submitted").iterdir()) == sorted(
        ["judy", "smithjohn", "Mary_Major", "John_Doe", "ann", "leeann"]
    )

    # With a roster: Canvas's and Moodle's user ids resolve to the roster's ids; a name it
    # does not hold is reported (who, which file, what to do), never graded as a new student.
    (root / "roster.csv").write_text(
        "id,name,canvas_id,moodle_id,username\n"
        "s1,Judy Hopps,123456,,\ns2,John Smith,,,\ns3,John Doe,,4321,\ns4,Ann Other,,,ann\n"
    )
    for folder in (root / "submitted").iterdir():
        for path in folder.rglob("*"):
            path.unlink() if path.is_file() else None
    items = {
        i.source.split("/archive/")[1]: i for i in course_collect.collect(root, config, ["masks"])
    }
    who = {k: (i.action, i.student) for k, i in items.items()}
    assert who["judy_LATE_123456_7891011_masks.ipynb"] == ("collected", "s1")
    assert who["smithjohn_222_333_masks-1.ipynb"] == ("collected", "s2")
    assert who["John Doe_4321_assignsubmission_file_/my work.ipynb"] == ("mapped", "s3")
    assert who["Masks_ann_attempt_2026-09-30-10-00-00_masks (2).ipynb"] == ("collected", "s4")
    mary = items["Mary Major_99_assignsubmission_file_masks.ipynb"]
    assert (mary.action, mary.student, mary.unknown) == ("skipped", "", "Mary Major (Moodle id 99)")
    assert f"add them to {root / 'roster.csv'}" in mary.why
    report = (root / "collect-report.txt").read_text()
    assert "2 downloads from students the roster does not hold" in report
    assert (
        "  leeann (Canvas user 5): masks/archive/leeann_5_6_submission.zip:Untitled.ipynb" in report
    )
    graded = {p.parents[1].name for p in (root / "submitted").glob("*/masks/masks.ipynb")}
    assert graded == {"s1", "s2", "s3", "s4"}


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    """An empty nbgrader gradebook, made once (nbgrader runs alembic for a new one): each test
    copies it."""
    from nbgrader.api import Gradebook

    from autograder.channels.nbgrader.autograde import COURSE_ID

    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    old = os.environ["PATH"]  # alembic, from this Python's folder (as course.py runs nbgrader)
    os.environ["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{old}"
    try:
        Gradebook(f"sqlite:///{path}", COURSE_ID).close()
    finally:
        os.environ["PATH"] = old
    return path


def test_nbgraders_students_table_is_a_roster(tmp_path, gradebook):
    from nbgrader.api import Gradebook

    shutil.copy(gradebook, tmp_path / "gradebook.db")
    from autograder.channels.nbgrader.autograde import COURSE_ID

    (tmp_path / "roster.csv").write_text("id,name\ns1,Judy Hopps\n")
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", COURSE_ID) as gb:
        gb.add_student("s2", first_name="John", last_name="Smith", lms_user_id="222")
        gb.add_student("phantom")  # autograde --create's: no name, no e-mail, no LMS id
    roster = course_collect.load_roster(tmp_path)
    assert sorted(roster.students) == ["s1", "s2"]
    assert roster.resolve(lms.parse("smithjohn_222_1_masks.ipynb")) == ("s2", "")
    assert roster.resolve(None, "phantom")[0] == ""


@pytest.mark.fast
def test_batch_keeps_the_letters_of_every_script_in_a_students_name(tmp_path):
    """Müller and Möller were rows `M_ller` and `M_ller_` (which was which, unrecorded): letters
    and digits of any script are kept, a Mac zip's decomposed accents composed first."""
    names = ["Müller", "Möller.zip", "张伟", "José García_4321_assignsubmission_file_"]
    for name in names:
        (tmp_path / name).mkdir() if "." not in name else (tmp_path / name).write_bytes(b"")
    found = batch.find_submissions(tmp_path)
    assert sorted(batch.student_name(p) for p in found) == sorted(
        ["Müller", "Möller", "张伟", "José_García"]
    )
    assert batch.student_name(tmp_path / "Mu\u0308ller") == "Müller"  # NFD, as a Mac writes it
    assert batch.student_name(tmp_path / "a\u202eb c") == "a_b_c"  # no controls, no spaces


@pytest.mark.fast
def test_batch_reads_platforms_names_and_grades_the_latest_upload(tmp_path):
    names = [
        "judy_LATE_123456_7891011_submission.zip",
        "smithjohn_222_332_submission.zip",
        "smithjohn_222_333_submission-1.zip",
        "John Smith_4321_assignsubmission_file_",
        "alice",
    ]
    for name in names:
        (tmp_path / name).mkdir() if "." not in name else (tmp_path / name).write_bytes(b"")
    found, notes = batch.latest_per_student(batch.find_submissions(tmp_path))
    assert sorted(batch.student_name(p) for p in found) == [
        "John_Smith", "alice", "judy", "smithjohn"
    ]  # fmt: skip
    assert "smithjohn_222_333_submission-1.zip" in {p.name for p in found}
    assert notes == [
        "smithjohn_222_332_submission.zip: left out, smithjohn_222_333_submission-1.zip is the "
        "later one"
    ]


def test_a_point_override_after_the_release_never_scores_above_the_maximum(tmp_path, gradebook):
    """The cause of a regrade's 21 / 20: course.toml gave attention.reference one point more
    after the release; the gradebook's cell kept its released maximum while the score followed
    course.toml. The cell now takes course.toml's points, and no check scores above them."""
    from nbgrader.api import Gradebook

    from autograder.channels.nbgrader import autograde as course_judge
    from autograder.core import registry
    from autograder.core.check import Result
    from autograder.feedback import sinks

    shutil.copy(gradebook, tmp_path / "gradebook.db")
    checks = registry.checks_of("attention")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url, course_judge.COURSE_ID) as gb:  # as make release leaves it
        gb.add_assignment("attention")
        gb.add_notebook("attention", "attention")
        for c in checks:
            gb.add_grade_cell(
                f"test-{c.slug}", "attention", "attention", max_score=c.points, cell_type="code"
            )
        gb.add_student("alice")
        gb.add_submission("attention", "alice")
    course_config.write(tmp_path, ["attention"])
    toml = tmp_path / course_config.FILE
    toml.write_text(toml.read_text().replace("[points]", '[points]\n"attention.reference" = 4'))
    config = course_config.load(tmp_path)
    released = sum(c.points for c in checks)
    assert config.points["attention.reference"] == registry.find("attention.reference").points + 1
    results = [Result.of(c, "passed") for c in checks]
    book = course_judge.GradebookSink(tmp_path, config, "attention")
    course_judge.write_gradebook(book, sinks.ResultSet("alice", results, notes=[], hints=None))
    with Gradebook(url, course_judge.COURSE_ID) as gb:
        submission = gb.find_submission("attention", "alice")
        assert submission.score == submission.max_score == released + 1 == book.score
        assert gb.find_assignment("attention").max_score == released + 1


def test_regrade_asks_for_one_student_or_all(tmp_path, capsys):
    from autograder.channels.cli import main

    assert main(["regrade", "--root", str(tmp_path)]) == 2
    assert "give --student ID (one student) or --all" in capsys.readouterr().err
    assert main(["regrade", "--root", str(tmp_path), "--all", "--student", "x"]) == 2
    assert "not both" in capsys.readouterr().err
