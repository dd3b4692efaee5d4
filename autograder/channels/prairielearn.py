"""PrairieLearn: `make prairielearn` writes a course folder; its external grader runs the kit.

    build/prairielearn/
      infoCourse.json
      courseInstances/Default/...            one homework listing every question
      questions/attention-lab-<module>/
        info.json                            External grading, entrypoint below
        question.html                        the module file, editable in the browser
        <module>.py                          the stub the editor starts from (assignments/)
        tests/attention_lab.json             which module this question grades
      serverFilesCourse/attention_lab/
        autograder/ solutions/ requirements.lock   the kit (never shown to students)
        pl_grade.sh                          the grader's entrypoint
        Dockerfile                           the grader image: the student set, CPU torch
        secret.json                          the hidden tier's secret (seed per variant)

PrairieLearn runs the grader in a container with /grade/{student,tests,serverFilesCourse,data}
mounted; pl_grade.sh calls `python -m autograder prairielearn-run`, which grades
/grade/student/<module>.py in the sandbox (probes in a confined process, verdicts outside it),
on the hidden tier with a seed derived from the secret and the variant's seed, and writes
/grade/results/results.json (sinks.PrairieLearnJson): score (0..1), gradable, message, output,
and tests[] with name, description, points, max_points, message, output; a question is worth
its module's one total (sinks.module_max). ATTENTION_LAB_PL_ROOT moves /grade.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import secrets
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from ..core import registry, seeds
from ..core.paths import ROOT
from ..core.settings import Settings
from ..feedback import sinks
from ..run.sandbox.jail import Limits
from .options import add_platform_verbs, modules_of

KIT = "attention_lab"
IMAGE = "attention-lab-grader"  # build it from serverFilesCourse/attention_lab/Dockerfile
NAMESPACE = uuid.UUID("6f1c2a52-3d4e-4b8f-9a51-7e0c1d2b3a40")

ENTRYPOINT = """\
#!/usr/bin/env bash
# PrairieLearn's external grader runs this in the grading container: the student's file is
# in $ROOT/student, results go to $ROOT/results/results.json. ATTENTION_LAB_PL_ROOT overrides
# the root (/grade) for a simulated run; ATTENTION_LAB_PYTHON the interpreter.
set -euo pipefail
ROOT="${ATTENTION_LAB_PL_ROOT:-/grade}"
PYTHON="${ATTENTION_LAB_PYTHON:-python3}"
KIT="$ROOT/serverFilesCourse/attention_lab"
mkdir -p "$ROOT/results"
# Student code runs under an unprivileged uid; these permissions keep the solutions, the
# secret and the results from it where the container allows no mount namespaces.
chmod -R go-rwx "$KIT/solutions" "$KIT/secret.json" "$ROOT/results" 2>/dev/null || true
cd "$KIT"
export PYTHONPATH="$KIT" PYTHONDONTWRITEBYTECODE=1
exec "$PYTHON" -m autograder prairielearn-run --root "$ROOT"
"""

DOCKERFILE = """\
# The grading image for PrairieLearn's external grader: Python 3.11 and the kit's student
# set (requirements.lock), with torch's CPU-only build from PyTorch's own index.
FROM python:3.11-slim
COPY requirements.lock /tmp/requirements.lock
RUN TORCH="$(grep -E '^torch==' /tmp/requirements.lock)" \\
 && pip install --no-cache-dir --no-deps "$TORCH" \\
      --index-url https://download.pytorch.org/whl/cpu \\
 && pip install --no-cache-dir -r /tmp/requirements.lock
"""


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
    for folder in ("autograder", "solutions"):
        shutil.copytree(
            ROOT / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    shutil.copy(ROOT / "requirements.lock", target / "requirements.lock")


def build(out: Path, modules: list[str] | None = None) -> Path:
    if not (ROOT / "solutions" / "__init__.py").is_file():
        raise FileNotFoundError("solutions/ is not here: the grader needs them (hidden tier)")
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    modules = modules or registry.modules()
    (out / "questions").mkdir(parents=True)
    info = {
        "uuid": str(uuid.uuid5(NAMESPACE, "course")),
        "name": "attention-lab",
        "title": "Attention Lab",
        "topics": [{"name": "Attention", "color": "blue1", "description": "Transformer attention"}],
        "assessmentSets": [
            {"abbreviation": "HW", "name": "Homework", "heading": "Homework", "color": "green1"}
        ],
    }
    (out / "infoCourse.json").write_text(json.dumps(info, indent=2) + "\n")
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
                "enabled": True,
                "image": IMAGE,
                "serverFilesCourse": [f"{KIT}/"],
                "entrypoint": f"/grade/serverFilesCourse/{KIT}/pl_grade.sh",
                "timeout": 180,
            },
        }
        (folder / "info.json").write_text(json.dumps(question, indent=2) + "\n")
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
    (instance / "infoCourseInstance.json").write_text(
        json.dumps({"uuid": str(uuid.uuid5(NAMESPACE, "instance")), "longName": "Attention Lab"})
        + "\n"
    )
    assessment = {
        "uuid": str(uuid.uuid5(NAMESPACE, "homework")),
        "type": "Homework",
        "title": "Attention Lab",
        "set": "Homework",
        "number": "1",
        "zones": [
            {"questions": [{"id": _question_id(m), "points": _points_of(out, m)} for m in modules]}
        ],
    }
    (instance / "assessments" / "homework" / "infoAssessment.json").write_text(
        json.dumps(assessment, indent=2) + "\n"
    )
    return out


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
        if submitted.is_file() and not submitted.is_symlink():
            shutil.copyfile(submitted, package / f"{module}.py")
        # Hidden from student code: the upload's folder, the results, PrairieLearn's data and
        # the secret (the kit's solutions/ are hidden by the sandbox itself).
        hide = [root / "student", root / "results", root / "data", stage]
        hide.append(root / "serverFilesCourse" / KIT / "secret.json")
        from ..run.sandbox.runner import Sandbox  # torch: only when grading

        # slow: every check, as every channel (sinks.module_max: one total per module)
        with Sandbox(
            [module],
            seed=_seed(root, module),
            hide=hide,
            limits=Limits.of(settings),
            sandbox_mode=settings.sandbox_mode,
            slow=True,
        ) as sb:
            graded = sb.grade(package, "student")
        if not (package / f"{module}.py").is_file():
            graded.notes.insert(0, f"No {module}.py was submitted.")
        result_set = sinks.ResultSet.of_graded(graded, f"Attention Lab: {module}.py")
        sinks.publish(result_set, [sinks.PrairieLearnJson(results, module)])
    except Exception as e:  # noqa: BLE001 - the grader itself failed: say so, not gradable
        data = {"gradable": False, "score": 0.0, "message": f"grader error: {type(e).__name__}"}
        print(f"grader error: {type(e).__name__}: {e}", file=sys.stderr)
        results.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return 0


def cmd_build(args) -> int:
    wanted = modules_of(args.ex)
    try:
        out = build(Path(args.out), wanted)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}: questions/ (one per module), serverFilesCourse/{KIT}/ (the grader)")
    print(f"build the grading image `{IMAGE}` from serverFilesCourse/{KIT}/Dockerfile")
    return 0


def add_verbs(verbs) -> None:
    add_platform_verbs(
        verbs,
        "prairielearn",
        "PrairieLearn",
        build=cmd_build,
        run=run,
        out="build/prairielearn",
        root_field="prairielearn_root",
        build_help="write a PrairieLearn course folder",
        run_help="grade /grade/student (PrairieLearn)",
    )
