"""Gradescope: `make gradescope` builds autograder.zip; run_autograder grades one upload.

autograder.zip holds setup.sh and run_autograder (from this folder), requirements.lock, the
autograder/ package, solutions/ (for the hidden tier's reference outputs) and data/ (the
training checks' corpus): paths.SHIPPED_TO_SERVERS. Gradescope unpacks it into
/autograder/source, runs setup.sh once, then run_autograder per submission,
which calls `python -m autograder gradescope-run`: the upload in /autograder/submission is
graded in the sandbox (hidden tier: a fresh seed per run; verdicts outside the sandbox) and
/autograder/results/results.json is written. ATTENTION_LAB_GRADESCOPE_ROOT moves the root.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

from ...core import seeds
from ...core.paths import COURSE_TOML, ROOT, SHIPPED_TO_SERVERS
from ...core.settings import Settings, limits_toml
from ...feedback import sinks

HERE = Path(__file__).resolve().parent
CONFIG = "attention_lab.json"  # in the zip: the modules to grade (`make gradescope EX=...`)


def zip_members() -> list[tuple[Path, str]]:
    """(file on disk, name in the zip) for everything autograder.zip holds."""
    members = [(HERE / "setup.sh", "setup.sh"), (HERE / "run_autograder", "run_autograder")]
    members.append((ROOT / "requirements.lock", "requirements.lock"))
    for folder in SHIPPED_TO_SERVERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                members.append((path, path.relative_to(ROOT).as_posix()))
    return members


def build(out: Path, modules: list[str] | None = None) -> Path:
    if not (ROOT / "solutions" / "__init__.py").is_file():
        raise FileNotFoundError(
            "solutions/ is not here (the student copy?): autograder.zip needs the solutions "
            "to compute the hidden tier's reference outputs"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, name in zip_members():
            info = zipfile.ZipInfo.from_file(path, name)
            mode = 0o755 if name in ("setup.sh", "run_autograder") else 0o644
            info.external_attr = (0o100000 | mode) << 16
            with open(path, "rb") as f:
                zf.writestr(info, f.read(), zipfile.ZIP_DEFLATED)
        # The feedback's language: the one `make gradescope` ran in (LANG=zh_CN.UTF-8: Chinese)
        from ...core.i18n import current

        zf.writestr(CONFIG, json.dumps({"modules": modules or [], "lang": current()}) + "\n")
        # The course's [limits] (no secret): gradescope-run resolves them as every channel does
        limits = limits_toml(COURSE_TOML)
        if limits:
            zf.writestr(COURSE_TOML.relative_to(ROOT).as_posix(), limits)
        # The hidden-seed secret (root-only once unpacked: run_autograder): each upload's
        # seed is derived from it and the submitter's Gradescope id.
        secret, _made = seeds.course_secret()
        info = zipfile.ZipInfo(seeds.SECRET_MEMBER)
        info.external_attr = (0o100000 | 0o600) << 16
        zf.writestr(info, secret + "\n")
    return out


def student_id(root: Path) -> str:
    """The submitter's id from Gradescope's submission_metadata.json ('' if none): the ids
    of every member of a group, joined (a group shares one seed)."""
    try:
        users = json.loads((root / "submission_metadata.json").read_text())["users"]
        ids = sorted(str(u.get("id") or u.get("email") or "") for u in users)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ""
    return ",".join(i for i in ids if i)


def submission_id(root: Path) -> str:
    """This upload's id from Gradescope's submission_metadata.json ('' if none): each upload,
    and a regrade of it, draws the inputs of its own seed (seeds.student_seed's attempt)."""
    try:
        return str(json.loads((root / "submission_metadata.json").read_text())["id"] or "")
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _write_results(path: Path, data: dict) -> None:
    data["stdout_visibility"] = "hidden"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def run(root: Path, settings: Settings | None = None) -> int:
    """Grade root/submission into root/results/results.json (what run_autograder calls).
    results.json is written whatever happens: a refused sandbox, an unreadable upload or a
    grader bug give a score of 0 and a plain line saying why. `settings`: the run's (the
    limits, the sandbox's mode, insecure: ATTENTION_LAB_* for a simulated run)."""
    from ...run.limits import TimeLimits
    from ...run.sandbox.jail import Limits, SandboxUnavailable
    from ...run.sandbox.runner import Sandbox
    from ..batch import NotGraded, extract_zip, package_folder, plain, with_notebooks

    settings = settings or Settings()

    submission, results = root / "submission", root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    unpacked = Path(tempfile.mkdtemp(prefix="attention-lab-upload-"))
    insecure = settings.insecure
    try:
        notes = []
        zips = sorted(submission.glob("*.zip")) if submission.is_dir() else []
        upload = submission if submission.is_dir() else unpacked
        if not any(package_folder(upload).glob("*.py")) and len(zips) == 1:  # a .zip as it is
            upload = unpacked / "zip"
            upload.mkdir()
            notes = extract_zip(zips[0], upload)
        # a notebook (.ipynb) is graded as make autograde grades it: its code as <module>.py
        folder, found = with_notebooks(upload, unpacked / "notebooks")
        notes += found
        hide = [submission, results.parent, root / "submission_metadata.json", unpacked]
        hide.append(root / "source" / seeds.SECRET_MEMBER)
        config = root / "source" / CONFIG
        built = json.loads(config.read_text()) if config.is_file() else {}  # make gradescope's
        modules = built.get("modules", [])
        from ...core.i18n import use

        use(str(built.get("lang", "")))
        secret = seeds.read_member_secret(root / "source" / seeds.SECRET_MEMBER)
        who = student_id(root)
        sandbox = Sandbox(
            modules or None,
            limits=Limits.of(settings),
            time_limits=TimeLimits.of(settings),  # the one rule of every channel
            hide=hide,
            insecure=insecure,
            sandbox_mode=settings.sandbox_mode,
            need_cgroups=False,  # one upload per container
            per_student=bool(secret and who),
            slow=True,  # every check: each module's one total (sinks.module_max)
        )
        # Closing the sandbox kills every process of its uid: only then is results.json
        # written, so nothing the student started can rewrite it.
        with sandbox as sb:
            warning = sb.isolation.warning()
            attempt = submission_id(root) or seeds.attempt_id(folder)
            own = seeds.student_seed(secret, who, attempt) if secret and who else None
            graded = sb.grade(folder, "submission", seed=own)
        graded.notes[:0] = notes
        if warning:
            graded.notes.insert(0, warning)
        if not any(folder.glob("*.py")) and not graded.not_graded:
            graded.notes.insert(0, "No Python files were found in your upload.")
    except SandboxUnavailable as e:
        _write_results(results, {"score": 0, "tests": [], "output": _REFUSED})
        print(f"error: {e}")
        return 0
    except NotGraded as e:
        _write_results(results, {"score": 0, "tests": [], "output": f"Not graded: {e}."})
        print(f"not graded: {e}")
        return 0
    except Exception as e:
        output = f"Not graded: the autograder failed ({type(e).__name__}: {plain(str(e))})."
        _write_results(results, {"score": 0, "tests": [], "output": output})
        traceback.print_exc(file=sys.stdout)
        return 0
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)
    # results.json; stdout, shown to instructors only: the full feedback, how the run was made.
    how = (
        f"seed {own} of {who}, attempt {attempt}"
        if own is not None
        else f"seed {sb.seed}: no secret or no id"
    )
    result_set = sinks.ResultSet.of_graded(graded, f"Attention Lab: hidden tier ({how})")
    json_sink = sinks.GradescopeJson(results, extra={"stdout_visibility": "hidden"})
    try:
        sinks.publish(result_set, [json_sink, sinks.FeedbackText(stream=sys.stdout)])
    except Exception as e:
        output = f"Not graded: the autograder failed ({type(e).__name__}: {plain(str(e))})."
        _write_results(results, {"score": 0, "tests": [], "output": output})
        traceback.print_exc(file=sys.stdout)
    print(f"isolation: {sb.isolation.summary()}. {warning}".strip())
    return 0


_REFUSED = (
    "Not graded: this autograder cannot isolate student code in its container, so it "
    "refused to run your code. Your instructor has been told (the autograder's output "
    "says what is missing)."
)
