"""PrairieLearn: `make prairielearn` writes a course folder; its external grader runs the kit.

    build/prairielearn/
      README.md                              how to build and push the image, then sync
      infoCourse.json
      courseInstances/Default/
        infoCourseInstance.json              published from --start until 30 days after --due
        assessments/homework/infoAssessment.json
                                             one homework listing every question: released
                                             at --start, due at --due, practice afterwards
      questions/attention-lab-<module>/
        info.json                            External grading, entrypoint below
        question.html                        the module file, editable in the browser
        <module>.py                          the stub the editor starts from (assignments/)
        tests/attention_lab.json             which module this question grades
      serverFilesCourse/attention_lab/
        autograder/ solutions/ data/ requirements.lock   the kit (never shown to students)
        pl_grade.sh                          the grader's entrypoint
        Dockerfile                           the grader image: the student set, CPU torch;
                                             --image names it (registry/namespace/name:tag)
        secret.json                          the hidden tier's secret (seed per variant)

PrairieLearn runs the grader in a container with /grade/{student,tests,serverFilesCourse,data}
mounted; pl_grade.sh calls `python -m autograder prairielearn-run`, which grades
/grade/student/<module>.py in the sandbox (probes in a confined process, verdicts outside it),
on the hidden tier with a seed derived from the secret and the variant's seed, and writes
/grade/results/results.json (sinks.PrairieLearnJson): score (0..1), gradable, message, output,
and tests[] with name, description, points, max_points, message, output; a question is worth
its module's one total (sinks.module_max). ATTENTION_LAB_PL_ROOT moves /grade.

Every JSON file written here is valid under PrairieLearn's published schemas (a kit test,
tests/kit/test_prairielearn_course.py, checks them against the copies in
tests/data/prairielearn-schemas/).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import html
import json
import re
import secrets
import shutil
import sys
import tempfile
import uuid
import zoneinfo
from pathlib import Path
from typing import Any

from ..core import registry, seeds
from ..core.paths import COURSE_TOML, ROOT, SHIPPED_TO_SERVERS
from ..core.settings import Settings, limits_toml
from ..feedback import sinks
from ..run.sandbox.jail import Limits, SandboxUnavailable

KIT = "attention_lab"
# The grading image's default name, without its tag (image_tag() adds it): a registry
# reference PrairieLearn can pull. Instructors push under their own namespace:
# `make prairielearn PL_IMAGE=docker.io/<account>/attention-lab-grader:<tag>`.
IMAGE_REPOSITORY = "docker.io/attentionlab/attention-lab-grader"
# registry/namespace[/...]/name:tag, lower case (Docker's reference grammar, narrowed to what
# a registry accepts for a push: a registry host, at least a namespace and a name, a tag).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    rf"(?P<registry>(?:[a-z0-9-]+\.)+[a-z0-9-]+(?::[0-9]+)?|localhost(?::[0-9]+)?)"
    rf"(?P<path>(?:/{_COMPONENT}){{2,}}):(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})"
)
# The course instance stays published this long after the homework is due (students read
# their feedback), and the homework is due this long after its release unless --due says.
PUBLISHED_AFTER_DUE = dt.timedelta(days=30)
DEFAULT_TERM = dt.timedelta(weeks=16)
NAMESPACE = uuid.UUID("6f1c2a52-3d4e-4b8f-9a51-7e0c1d2b3a40")

ENTRYPOINT = """\
#!/usr/bin/env bash
# PrairieLearn's external grader runs this in the grading container: the student's file is
# in $ROOT/student, results go to $ROOT/results/results.json. ATTENTION_LAB_PL_ROOT overrides
# the root (/grade) for a simulated run; ATTENTION_LAB_PYTHON the interpreter.
#
# The container is an ordinary one (root without CAP_SYS_ADMIN, Docker's seccomp profile):
# no mount namespace can hide anything, so student code runs under an unprivileged uid (the
# sandbox's uid mode) and these permissions keep from it what it must not read: the course's
# server files (the kit itself, its solutions, the secret), the results, PrairieLearn's data
# and the upload's own folder (the sandbox grades a copy it owns). The kit checks them before
# any student code runs and refuses otherwise; where even that cannot be had, results.json
# says so (gradable: false, with the reason).
set -uo pipefail
ROOT="${ATTENTION_LAB_PL_ROOT:-/grade}"
PYTHON="${ATTENTION_LAB_PYTHON:-python3}"
KIT="$ROOT/serverFilesCourse/attention_lab"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
rm -f "$RESULTS"
refuse() {  # results.json by hand: the kit could not even start
    printf '%s\\n' '{"gradable": false, "score": 0.0,' \\
        " \\"message\\": \\"not graded: $1 Your instructor has been told.\\"}" >"$RESULTS"
    echo "error: $1 ($2)" >&2
    exit 0
}
chmod 711 "$ROOT" 2>/dev/null
chmod -R go-rwx "$ROOT/serverFilesCourse" "$ROOT/student" "$ROOT/data" "$ROOT/tests" \\
    "$ROOT/results" 2>/dev/null
cd "$KIT" || refuse "the grader is not installed." "$KIT: cannot enter"
export PYTHONPATH="$KIT" PYTHONDONTWRITEBYTECODE=1
"$PYTHON" -m autograder prairielearn-run --root "$ROOT"
code=$?
[ -s "$RESULTS" ] || refuse "the grader failed before grading." "exit status $code"
exit 0
"""

DOCKERFILE = """\
# The grading image for PrairieLearn's external grader: Python 3.11 and the kit's student
# set (requirements.lock), with torch's CPU-only build from PyTorch's own index.
# libseccomp2 for the sandbox's seccomp filter (pyseccomp). Build it for linux/amd64, the
# platform PrairieLearn's graders run: see README.md next to infoCourse.json.
FROM python:3.11-slim
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libseccomp2 \\
 && rm -rf /var/lib/apt/lists/*
COPY requirements.lock /tmp/requirements.lock
RUN TORCH="$(grep -E '^torch==' /tmp/requirements.lock)" \\
 && pip install --no-cache-dir --no-deps "$TORCH" \\
      --index-url https://download.pytorch.org/whl/cpu \\
 && pip install --no-cache-dir -r /tmp/requirements.lock
"""


def image_tag() -> str:
    """The default tag: `lock-` and a digest of what the image holds (this Dockerfile and
    requirements.lock), so a new dependency set gets a new tag and graders pull it."""
    digest = hashlib.sha256(DOCKERFILE.encode() + (ROOT / "requirements.lock").read_bytes())
    return f"lock-{digest.hexdigest()[:12]}"


def default_image() -> str:
    return f"{IMAGE_REPOSITORY}:{image_tag()}"


def check_image(image: str) -> str:
    """`image` when it is a registry reference an instructor can push and PrairieLearn can
    pull (registry/namespace/name:tag, lower case); otherwise a ValueError that says so."""
    if not _REFERENCE.fullmatch(image):
        raise ValueError(
            f"PL_IMAGE={image!r} is not a registry reference of the form "
            "registry/namespace/name:tag in lower case "
            f"(e.g. {IMAGE_REPOSITORY}:{image_tag()})"
        )
    return image


def parse_date(text: str, what: str, end_of_day: bool = False) -> dt.datetime:
    """YYYY-MM-DD (00:00:01, or 23:59:59 with end_of_day) or YYYY-MM-DDTHH:MM[:SS]."""
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            day = dt.datetime.fromisoformat(text)
            return (
                day.replace(hour=23, minute=59, second=59) if end_of_day else day.replace(second=1)
            )
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?", text):
            return dt.datetime.fromisoformat(text)
    except ValueError:
        pass
    raise ValueError(f"{what}={text!r}: expected a date, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]")


def _pl_date(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def _question_id(module: str) -> str:
    return f"attention-lab-{module}"


def _question_html(module: str, summary: str) -> str:
    return f"""<pl-question-panel>
  <p><strong>Attention Lab: <code>{module}.py</code></strong></p>
  <p>{html.escape(summary)}</p>
  <p>Edit the module below: replace each <code>raise NotImplementedError(...)</code> with your
  code, as the TODO boxes say. It is graded on inputs you have not seen; each check that
  fails names the likely mistake and gives a hint.</p>
</pl-question-panel>

<pl-file-editor file-name="{module}.py" ace-mode="ace/mode/python" source-file-name="{module}.py">
</pl-file-editor>

<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
  <pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""


def _copy_kit(target: Path) -> None:
    for folder in SHIPPED_TO_SERVERS:
        shutil.copytree(
            ROOT / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    shutil.copy(ROOT / "requirements.lock", target / "requirements.lock")
    # The course's [limits] (no secret): prairielearn-run resolves them as every channel does
    limits = limits_toml(COURSE_TOML)
    if limits:
        (target / "course").mkdir(exist_ok=True)
        (target / COURSE_TOML.relative_to(ROOT)).write_text(limits)


def build(
    out: Path,
    modules: list[str] | None = None,
    *,
    image: str | None = None,
    start: dt.datetime | None = None,
    due: dt.datetime | None = None,
    timezone: str = "UTC",
) -> Path:
    """Write the course to `out`. `image`: the grading image (default default_image());
    `start`: when the course instance is published and the homework released (default today);
    `due`: when the homework is due (default 16 weeks after start), practice afterwards;
    `timezone`: the course's, in which those dates are read (an IANA name)."""
    if not (ROOT / "solutions" / "__init__.py").is_file():
        raise FileNotFoundError("solutions/ is not here: the grader needs them (hidden tier)")
    image = check_image(image or default_image())
    try:
        zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"PL_TIMEZONE={timezone!r} is not a timezone name (e.g. UTC, America/Chicago)"
        ) from None
    start = start or dt.datetime.combine(dt.date.today(), dt.time(0, 0, 1))
    due = due or (start + DEFAULT_TERM).replace(hour=23, minute=59, second=59)
    if due <= start:
        raise ValueError(f"the due date {_pl_date(due)} is not after the start {_pl_date(start)}")
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    modules = modules or registry.modules()
    (out / "questions").mkdir(parents=True)
    info = {
        "uuid": str(uuid.uuid5(NAMESPACE, "course")),
        "name": "attention-lab",
        "title": "Attention Lab",
        "timezone": timezone,
        "topics": [{"name": "Attention", "color": "blue1", "description": "Transformer attention"}],
        "assessmentSets": [
            {"abbreviation": "HW", "name": "Homework", "heading": "Homework", "color": "green1"}
        ],
    }
    _write_json(out / "infoCourse.json", info)
    for module in modules:
        folder = out / "questions" / _question_id(module)
        (folder / "tests").mkdir(parents=True)
        stub = ROOT / "assignments" / f"{module}.py"
        shutil.copy(stub, folder / f"{module}.py")
        points = sinks.module_max(module)
        question = {
            "uuid": str(uuid.uuid5(NAMESPACE, module)),
            "title": f"Attention Lab: {module}.py",
            "topic": "Attention",
            "tags": ["attention-lab", module],
            "type": "v3",
            "singleVariant": True,
            "gradingMethod": "External",
            "externalGradingOptions": {
                "image": image,
                "serverFilesCourse": [f"{KIT}/"],
                "entrypoint": f"/grade/serverFilesCourse/{KIT}/pl_grade.sh",
                "timeout": 180,
            },
        }
        _write_json(folder / "info.json", question)
        summary = (stub.read_text().split('"""')[1].strip().splitlines() or [""])[0]
        (folder / "question.html").write_text(_question_html(module, summary))
        (folder / "tests" / "attention_lab.json").write_text(
            json.dumps({"module": module, "points": points}) + "\n"
        )
    kit = out / "serverFilesCourse" / KIT
    kit.mkdir(parents=True)
    _copy_kit(kit)
    (kit / "pl_grade.sh").write_text(ENTRYPOINT)
    (kit / "pl_grade.sh").chmod(0o755)
    (kit / "Dockerfile").write_text(DOCKERFILE)
    (kit / "secret.json").write_text(json.dumps({"secret": secrets.token_urlsafe(32)}) + "\n")
    instance = out / "courseInstances" / "Default"
    (instance / "assessments" / "homework").mkdir(parents=True)
    course_instance = {
        "uuid": str(uuid.uuid5(NAMESPACE, "instance")),
        "longName": "Attention Lab",
        # Students see the course instance in this window (staff always do); enrolment by
        # the instance's student link, or by invitation (PrairieLearn's defaults).
        "publishing": {
            "startDate": _pl_date(start),
            "endDate": _pl_date(due + PUBLISHED_AFTER_DUE),
        },
    }
    _write_json(instance / "infoCourseInstance.json", course_instance)
    assessment = {
        "uuid": str(uuid.uuid5(NAMESPACE, "homework")),
        "type": "Homework",
        "title": "Attention Lab",
        "set": "Homework",
        "number": "1",
        # Released at start, full credit until due, then practice (feedback, no credit).
        "accessControl": [
            {
                "dateControl": {
                    "release": {"date": _pl_date(start)},
                    "due": {"date": _pl_date(due)},
                    "afterLastDeadline": {"allowSubmissions": True, "credit": 0},
                }
            }
        ],
        "zones": [
            {
                "questions": [
                    {"id": _question_id(m), "autoPoints": _points_of(out, m)} for m in modules
                ]
            }
        ],
    }
    _write_json(instance / "assessments" / "homework" / "infoAssessment.json", assessment)
    (out / "README.md").write_text(_readme(image, modules))
    return out


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def image_commands(image: str, out: Path) -> list[str]:
    """The shell commands that build the grading image for PrairieLearn and push it."""
    context = Path(out) / "serverFilesCourse" / KIT
    return [
        f"docker build --platform linux/amd64 -t {image} {context}",
        f"docker push {image}",
    ]


def _readme(image: str, modules: list[str]) -> str:
    build_cmd, push_cmd = image_commands(image, Path("."))
    return f"""# Attention Lab on PrairieLearn

Written by `make prairielearn` (autograder/channels/prairielearn.py); regenerate rather
than edit. One question per module ({", ".join(modules)}), one homework listing them all
(courseInstances/Default/assessments/homework/).

1. Build the grading image and push it (from this folder; `docker login` first):

       {build_cmd}
       {push_cmd}

   The image name is the one in every question's info.json. To push under your own
   registry account, regenerate with `make prairielearn PL_IMAGE=registry/namespace/name:tag`.
2. Put this folder in your PrairieLearn course repository (or make it the repository) and
   sync it. In the course's Sync page, under "Docker images", sync the image above.
3. Dates (the course's timezone, infoCourse.json): the course instance is published and the
   homework released at PL_START, due at PL_DUE (full credit), open for practice afterwards;
   change them with `make prairielearn PL_START=YYYY-MM-DD PL_DUE=YYYY-MM-DD` or on
   PrairieLearn's Publishing and Access pages.

serverFilesCourse/{KIT}/secret.json holds the hidden tier's secret: keep this folder private
(a private repository), as you keep solutions/.
"""


def _points_of(out: Path, module: str) -> float:
    data = json.loads(
        (out / "questions" / _question_id(module) / "tests" / "attention_lab.json").read_text()
    )
    return data["points"]


def _seed(root: Path, module: str) -> int:
    kit = root / "serverFilesCourse" / KIT
    secret = json.loads((kit / "secret.json").read_text())["secret"]
    variant = ""
    data = root / "data" / "data.json"
    if data.is_file():
        try:
            variant = str(json.loads(data.read_text()).get("variant_seed", ""))
        except ValueError:
            variant = ""
    # The attempt: PrairieLearn's data.json names no submission, so the files handed in do
    # (seeds.attempt_id): changed code draws new inputs, a regrade of the same files the same.
    attempt = seeds.attempt_id(root / "student") if (root / "student").is_dir() else ""
    message = f"{module}\0{variant}\0{attempt}"
    digest = hmac.new(secret.encode(), message.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") % (2**31 - 2) + 1


def run(root: Path, settings: Settings | None = None) -> int:
    """Grade root/student/<module>.py into root/results/results.json, under the run's
    `settings` (the sandbox's mode and limits; default: Settings())."""
    settings = settings or Settings()
    root = Path(root)
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    try:
        module = json.loads((root / "tests" / "attention_lab.json").read_text())["module"]
    except (OSError, ValueError, KeyError) as e:
        data: dict[str, Any] = {
            "gradable": False,
            "message": f"grader misconfigured: {e}",
            "score": 0.0,
        }
        results.write_text(json.dumps(data) + "\n")
        return 0
    stage = Path(tempfile.mkdtemp(prefix="attention-lab-pl-"))
    try:
        package = stage / "submission"
        package.mkdir()
        submitted = root / "student" / f"{module}.py"
        notes: list[str] = []
        if not submitted.is_file() and (root / "student").is_dir():
            # a notebook upload: its code as <module>.py, as make autograde grades it
            from .batch import with_notebooks

            found, notes = with_notebooks(root / "student", stage / "notebooks")
            submitted = found / f"{module}.py"
        if submitted.is_file() and not submitted.is_symlink():
            shutil.copyfile(submitted, package / f"{module}.py")
        # Hidden from student code: the upload's folder, the results, PrairieLearn's data and
        # the secret (the kit's solutions/ are hidden by the sandbox itself).
        hide = [root / "student", root / "results", root / "data", stage]
        hide.append(root / "serverFilesCourse" / KIT / "secret.json")
        from ..run.limits import TimeLimits
        from ..run.sandbox.runner import Sandbox  # torch: only when grading

        # slow: every check, as every channel (sinks.module_max: one total per module)
        with Sandbox(
            [module],
            seed=_seed(root, module),
            hide=hide,
            limits=Limits.of(settings),
            time_limits=TimeLimits.of(settings),  # the one rule of every channel
            sandbox_mode=settings.sandbox_mode,
            need_cgroups=False,  # one submission per container (its cgroup is read-only)
            slow=True,
        ) as sb:
            graded = sb.grade(package, "student")
        graded.notes[:0] = notes
        if not (package / f"{module}.py").is_file():
            graded.notes.insert(0, f"No {module}.py was submitted.")
        result_set = sinks.ResultSet.of_graded(graded, f"Attention Lab: {module}.py")
        sinks.publish(result_set, [sinks.PrairieLearnJson(results, module)])
    except SandboxUnavailable as e:  # fail closed: no student code ran
        data = {"gradable": False, "score": 0.0, "message": _REFUSED}
        print(f"error: {e}", file=sys.stderr)
        results.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except Exception as e:  # noqa: BLE001 - the grader itself failed: say so, not gradable
        data = {"gradable": False, "score": 0.0, "message": f"grader error: {type(e).__name__}"}
        print(f"grader error: {type(e).__name__}: {e}", file=sys.stderr)
        results.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return 0


_REFUSED = (
    "not graded: this grader cannot isolate student code in its container, so it refused "
    "to run your code. Your instructor has been told (the grader's log says what is missing)."
)
