"""PrairieLearn: the course `make prairielearn` writes is one PrairieLearn accepts.

Every JSON file it generates (infoCourse.json, each infoCourseInstance.json, each
infoAssessment.json, each question's info.json) is validated against PrairieLearn's own
published JSON schemas, kept as test data in tests/data/prairielearn-schemas/ (its README
names the repository, path and commit); what a schema cannot say (an assessment's question
ids exist, topics and sets are declared, the image can be pushed) is checked here too.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, run_cli

from autograder.channels import prairielearn
from autograder.core import registry
from autograder.feedback import sinks

SCHEMAS = ROOT / "tests" / "data" / "prairielearn-schemas"
START, DUE = "2026-09-01", "2026-12-15"
IMAGE = "ghcr.io/some-course/attention-lab-grader:fall-2026"


def validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(
        schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )


def schema_of(course: Path, path: Path) -> str:
    """Which PrairieLearn schema a generated JSON file falls under; KeyError for any other
    JSON file a PrairieLearn course would not hold in that place."""
    rel = path.relative_to(course)
    if rel == Path("infoCourse.json"):
        return "infoCourse"
    if rel.parts[0] == "courseInstances" and path.name == "infoCourseInstance.json":
        return "infoCourseInstance"
    if rel.parts[0] == "courseInstances" and path.name == "infoAssessment.json":
        return "infoAssessment"
    if rel.parts[0] == "questions" and len(rel.parts) == 3 and path.name == "info.json":
        return "infoQuestion"
    raise KeyError(str(rel))


def errors(name: str, data: dict) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator(name).iter_errors(data)
    ]


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """The whole course (every module), through the CLI as `make prairielearn` calls it."""
    out = tmp_path_factory.mktemp("pl") / "prairielearn"
    proc = run_cli(
        "prairielearn", "--out", str(out), "--image", IMAGE, "--start", START, "--due", DUE,
        "--timezone", "Europe/Paris",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"docker build --platform linux/amd64 -t {IMAGE} " in proc.stdout
    assert f"docker push {IMAGE}" in proc.stdout
    return out


def test_every_generated_json_file_is_valid_under_prairielearns_schemas(course):
    checked: dict[str, int] = {}
    problems = []
    for path in sorted(course.rglob("*.json")):
        if "serverFilesCourse" in path.parts or path.parent.name == "tests":
            continue  # the grader's own files: PrairieLearn copies them, never reads them
        name = schema_of(course, path)
        checked[name] = checked.get(name, 0) + 1
        problems += [f"{path.relative_to(course)}: {e}" for e in errors(name, json.loads(
            path.read_text()))]  # fmt: skip
    assert not problems, "\n".join(problems)
    modules = registry.modules()
    assert checked == {
        "infoCourse": 1,
        "infoCourseInstance": 1,
        "infoAssessment": 1,
        "infoQuestion": len(modules),
    }


def test_the_schemas_are_live_they_reject_what_prairielearn_rejects(course):
    """The validator is no rubber stamp: unknown keys, a missing uuid, an image that is no
    string, a bad date, a points value that is no number all fail."""
    info = json.loads((course / "infoCourse.json").read_text())
    assert errors("infoCourse", {**info, "colour": "blue"})
    question_path = next((course / "questions").glob("*/info.json"))
    question = json.loads(question_path.read_text())
    assert errors("infoQuestion", {k: v for k, v in question.items() if k != "uuid"})
    options = {**question["externalGradingOptions"], "image": 3}
    assert errors("infoQuestion", {**question, "externalGradingOptions": options})
    instance = json.loads(
        (course / "courseInstances" / "Default" / "infoCourseInstance.json").read_text()
    )
    assert errors("infoCourseInstance", {**instance, "publishing": {"start": START}})
    assessment_path = course / "courseInstances/Default/assessments/homework/infoAssessment.json"
    assessment = json.loads(assessment_path.read_text())
    zone = {"questions": [{"id": "attention-lab-masks", "autoPoints": "ten"}]}
    assert errors("infoAssessment", {**assessment, "zones": [zone]})
    access = [{"dateControl": {"release": {"date": "1 September"}}}]
    assert errors("infoAssessment", {**assessment, "accessControl": access})


def test_the_homework_lists_every_question_with_its_one_total_and_access_rules(course):
    info = json.loads((course / "infoCourse.json").read_text())
    assert info["timezone"] == "Europe/Paris"
    topics = {t["name"] for t in info["topics"]}
    sets = {s["name"] for s in info["assessmentSets"]}
    questions = {p.parent.name: json.loads(p.read_text()) for p in
                 (course / "questions").glob("*/info.json")}  # fmt: skip
    assert all(q["topic"] in topics for q in questions.values())
    instance = json.loads(
        (course / "courseInstances" / "Default" / "infoCourseInstance.json").read_text()
    )
    assessment = json.loads(
        (course / "courseInstances/Default/assessments/homework/infoAssessment.json").read_text()
    )
    assert assessment["set"] in sets
    slots = [q for zone in assessment["zones"] for q in zone["questions"]]
    assert [s["id"] for s in slots] == [f"attention-lab-{m}" for m in registry.modules()]
    assert set(questions) == {s["id"] for s in slots}  # every question listed, none missing
    for slot in slots:
        module = slot["id"].removeprefix("attention-lab-")
        assert slot["autoPoints"] == sinks.module_max(module)  # one total in every channel
    uuids = [info["uuid"], instance["uuid"], assessment["uuid"]]
    uuids += [q["uuid"] for q in questions.values()]
    assert len(set(uuids)) == len(uuids)
    # Access: students see the instance from the start until after the due date; the homework
    # is released at the start, due at the due date, open for practice (no credit) afterwards.
    published = instance["publishing"]
    assert published["startDate"] == f"{START}T00:00:01"
    assert published["endDate"] > f"{DUE}T23:59:59"
    (rule,) = assessment["accessControl"]
    assert rule["dateControl"]["release"] == {"date": f"{START}T00:00:01"}
    assert rule["dateControl"]["due"] == {"date": f"{DUE}T23:59:59"}
    assert rule["dateControl"]["afterLastDeadline"] == {"allowSubmissions": True, "credit": 0}


def test_the_grading_image_can_be_built_and_pushed_under_the_name_the_questions_use(course):
    for path in (course / "questions").glob("*/info.json"):
        options = json.loads(path.read_text())["externalGradingOptions"]
        assert options["image"] == IMAGE
        assert options["entrypoint"] == f"/grade/serverFilesCourse/{prairielearn.KIT}/pl_grade.sh"
    kit = course / "serverFilesCourse" / prairielearn.KIT
    dockerfile = (kit / "Dockerfile").read_text()
    assert dockerfile.startswith("#") and "\nFROM python:3.11-slim\n" in dockerfile
    assert "COPY requirements.lock " in dockerfile and (kit / "requirements.lock").is_file()
    readme = (course / "README.md").read_text()
    for command in prairielearn.image_commands(IMAGE, Path(".")):
        assert command in readme


def test_the_default_image_is_a_pushable_reference_and_bad_ones_are_refused(tmp_path):
    default = prairielearn.default_image()
    assert prairielearn.check_image(default) == default
    registry_host, namespace, rest = default.split("/", 2)
    assert "." in registry_host and namespace and ":" in rest and default == default.lower()
    for good in (IMAGE, "localhost:5000/course/grader:v1", "docker.io/a/b/c:1.0"):
        assert prairielearn.check_image(good) == good
    for bad in (
        "attention-lab-grader",  # no registry, no namespace, no tag: the name before
        "docker.io/attentionlab/attention-lab-grader",  # no tag
        "attentionlab/attention-lab-grader:v1",  # no registry
        "docker.io/AttentionLab/grader:v1",  # upper case
        "docker.io/grader:v1",  # no namespace
    ):
        with pytest.raises(ValueError, match="registry/namespace/name:tag"):
            prairielearn.check_image(bad)
    proc = run_cli("prairielearn", "--out", str(tmp_path / "pl"), "--ex", "masks",
                   "--image", "Attention-Lab-Grader")  # fmt: skip
    assert proc.returncode == 2 and "registry/namespace/name:tag" in proc.stderr
    assert not (tmp_path / "pl").exists()
    proc = run_cli("prairielearn", "--out", str(tmp_path / "pl"), "--ex", "masks",
                   "--start", "2026-12-01", "--due", "2026-09-01")  # fmt: skip
    assert proc.returncode == 2 and "not after the start" in proc.stderr
    proc = run_cli("prairielearn", "--out", str(tmp_path / "pl"), "--start", "1 Sept")
    assert proc.returncode == 2 and "PL_START" in proc.stderr
    with pytest.raises(ValueError, match="PL_TIMEZONE"):
        prairielearn.build(tmp_path / "pl", ["masks"], timezone="Mars/Olympus_Mons")


def test_the_make_variables_reach_the_verb():
    proc = subprocess.run(
        ["make", "-n", "--no-print-directory", "prairielearn", f"PL_IMAGE={IMAGE}",
         f"PL_START={START}", f"PL_DUE={DUE}", "PL_TIMEZONE=America/Chicago",
         "STAMP=Makefile"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "autograder prairielearn" in x)
    for flag in (f"--image {IMAGE}", f"--start {START}", f"--due {DUE}", "--timezone America"):
        assert flag in line


def test_dates_default_to_a_term_from_today(tmp_path):
    out = prairielearn.build(tmp_path / "pl", ["masks"])
    instance = json.loads(
        (out / "courseInstances" / "Default" / "infoCourseInstance.json").read_text()
    )
    start = dt.datetime.fromisoformat(instance["publishing"]["startDate"])
    assert start.date() == dt.date.today()
    assessment = json.loads(
        (out / "courseInstances/Default/assessments/homework/infoAssessment.json").read_text()
    )
    due = dt.datetime.fromisoformat(assessment["accessControl"][0]["dateControl"]["due"]["date"])
    assert due - start >= prairielearn.DEFAULT_TERM - dt.timedelta(days=1)
    assert not errors("infoAssessment", assessment) and not errors("infoCourseInstance", instance)
