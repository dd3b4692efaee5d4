"""Batch grading in the sandbox (`make batch`): grades, the channel, and the attack suite."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import unicodedata
import zipfile
from pathlib import Path

import pytest
import torch
from conftest import KIT, ROOT, SOLUTIONS, grade_folder, module_notebook

from autograder.channels import batch as batch_module
from autograder.core import registry as _registry
from autograder.feedback import sinks
from autograder.run.channel import malformed as _malformed
from autograder.run.sandbox import jail, wire

# attention + masks, the modules these tests grade (fast checks only)
_AM = [c for m in ("attention", "masks") for c in _registry.checks_of(m) if not c.slow]
AM_POINTS = f"{sum(c.points for c in _AM):g}"
MASKS_POINTS = f"{sum(c.points for c in _AM if c.module == 'masks'):g}"

ATTACKS = KIT / "attacks"
MODULES = "attention,masks"


def stage_attack(name: str, target: Path) -> Path:
    """Copy an attack's folder; files named *.attack lose that suffix (conftest.py...)."""
    folder = target / name
    shutil.copytree(ATTACKS / name, folder)
    for path in folder.glob("*.attack"):
        path.rename(path.with_suffix(""))
    return folder


def attack_names() -> list[str]:
    return sorted(p.name for p in ATTACKS.iterdir() if p.is_dir())


def reported(name: str) -> list[str]:
    found = []
    for path in (ATTACKS / name).iterdir():
        found += re.findall(r"^# reported: (.+)$", path.read_text(), re.M)
    return found


def mutant_source(module: str, mutant: str) -> str:
    """A mutant as a whole module: the solution, then the mutant's own definitions."""
    text = (KIT / "mutants" / module / f"{mutant}.py").read_text()
    text = re.sub(r"^from solutions\.\w+ import .*$", "", text, flags=re.M)
    return (SOLUTIONS / f"{module}.py").read_text() + "\n\n" + text


TOKEN = "tok-6f1c9e2a-instructor-secret"  # an instructor's secret in the grader's environment


def batch_cmd(submissions: Path, out: Path, *extra: str) -> list[str]:
    args = ["--submissions", str(submissions), "--out", str(out), "--ex", MODULES, *extra]
    return [sys.executable, "-m", "autograder", "batch", *args]


def batch_env(**extra: str) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "ATTENTION_LAB_TEST_TOKEN": TOKEN,
        **extra,
    }


def batch(submissions: Path, out: Path, *extra: str, ok: bool = True, **env: str):
    proc = subprocess.run(
        batch_cmd(submissions, out, *extra),
        cwd=ROOT,
        env=batch_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if ok:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def sandbox_processes() -> list[str]:
    """Processes left under a sandbox uid that no run holds (there must be none after a
    batch). A uid's lock (jail.UidPool) is held for as long as its run lives, and a uid with
    processes is never leased again, so a process under a uid whose lock is free outlived its
    run; one under a held uid belongs to a run still going (make test's other worker: a
    confined nbgrader kernel, another batch), not to the batch just ended."""
    ps = subprocess.run(["ps", "-eo", "uid=,pid=,args="], capture_output=True, text=True)
    low, high = jail.UID_BASE, jail.UID_BASE + jail.UID_COUNT
    found = [line for line in ps.stdout.splitlines() if low <= int(line.split()[0]) < high]
    return [line for line in found if not _uid_held(int(line.split()[0]))]


def _uid_held(uid: int) -> bool:
    """Whether a live run holds sandbox uid `uid`'s lock (jail.UidPool)."""
    for folder in jail.LOCK_DIRS:
        path = Path(folder) / f"uid-{uid}.lock"
        if not path.exists():
            continue
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
    return False


def leaked_files() -> list[Path]:
    return [
        p for d in ("/tmp", "/dev/shm", "/var/tmp") for p in Path(d).glob("attention-lab-leak*")
    ]


def output_text(out: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


def grades(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


@pytest.mark.fast
def test_wire_carries_plain_values_and_refuses_the_rest():
    outputs = {
        "f32": torch.randn(2, 3),
        "bf16": torch.randn(4).bfloat16(),
        "mask": torch.rand(3, 3) > 0.5,
        "empty": torch.zeros(0, 5, dtype=torch.int64),
        "flag": True,
        "n": 3,
        "x": 0.25,
        "s": "ValueError",
        "none": None,
        "param": torch.nn.Parameter(torch.ones(2)),
        "list": [1, 2],
    }
    described, blob = wire.encode_outputs(outputs)
    ((header, data),) = wire.parse(wire.frame({"outputs": described}, blob))[0]
    got = wire.decode_outputs(header["outputs"], data)
    for key in ("f32", "bf16", "mask", "empty"):
        assert type(got[key]) is torch.Tensor and torch.equal(got[key], outputs[key])
        assert got[key].dtype == outputs[key].dtype
    assert [got[k] for k in ("flag", "n", "x", "s", "none")] == [True, 3, 0.25, "ValueError", None]
    assert type(got["param"]).__name__ == "Parameter" and isinstance(got["param"], wire.Opaque)
    assert type(got["list"]).__name__ == "list" and not isinstance(got["list"], list)
    # Malformed input: no exception escapes parse(), decode refuses bad sizes and dtypes.
    assert wire.parse(b"garbage")[1] and wire.parse(b"ALAB" + b"\xff" * 8)[1]
    bad = dict(described["f32"], nbytes=4)
    with pytest.raises(wire.ChannelError):
        wire.decode_outputs({"f32": bad}, blob)
    with pytest.raises(wire.ChannelError):
        wire.decode_outputs({"f": dict(described["f32"], dtype="object")}, blob)


def test_batch_grades_folders_and_zips_on_the_hidden_tier(tmp_path, pristine_stubs):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(SOLUTIONS, subs / "alice", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOLUTIONS, subs / "bob", ignore=shutil.ignore_patterns("__pycache__"))
    (subs / "bob" / "attention.py").write_text(mutant_source("attention", "no_scaling"))
    with zipfile.ZipFile(subs / "carol.zip", "w") as zf:  # stubs, inside a folder
        for path in pristine_stubs.glob("*.py"):
            zf.write(path, f"my work/assignments/{path.name}")
        zf.write(SOLUTIONS / "attention.py", "my work/old/attention.py")  # fewer: not graded
    # notebooks, graded as make autograde grades them: dave's solved masks notebook beside
    # his attention.py; erin's untouched (released) one, in a .zip under an LMS's name
    (subs / "dave").mkdir()
    shutil.copy(SOLUTIONS / "attention.py", subs / "dave" / "attention.py")
    module_notebook("masks", subs / "dave" / "masks.ipynb")
    stub = module_notebook("masks", tmp_path / "erin_LATE_1_2_masks.ipynb", solved=False)
    with zipfile.ZipFile(subs / "erin.zip", "w") as zf:
        zf.write(stub, stub.name)
    (subs / "notes.txt").write_text("not a submission")
    # A learning platform's download of loose files, named after their students: Canvas's
    # (masks.py uploaded again: -1 is the later one), Blackboard's (two attempts: the later
    # one's files only); a loose file no platform named is left out, and said so.
    masks, attention = ((SOLUTIONS / f"{m}.py").read_text() for m in ("masks", "attention"))
    wrong = mutant_source("masks", "causal_transposed")
    (subs / "smithjohn_123456_7891011_masks.py").write_text(wrong)
    (subs / "smithjohn_123456_7891012_masks-1.py").write_text(masks)
    (subs / "smithjohn_123456_7891013_attention.py").write_text(attention)
    (subs / "HW_jsmith_attempt_2026-10-01-23-59-07_attention.py").write_text(attention)
    (subs / "HW_jsmith_attempt_2026-10-01-23-59-07_masks.py").write_text(masks)
    (subs / "HW_jsmith_attempt_2026-10-02-10-00-00_masks.py").write_text(masks)
    (subs / "masks.py").write_text(masks)
    out = tmp_path / "out"
    proc = batch(subs, out)
    assert "graded 7 submissions" in proc.stdout
    assert "masks.py: left out: a loose file no learning platform named" in proc.stderr
    assert "HW_jsmith_attempt_2026-10-01-23-59-07_attention.py: left out, an earlier" in (
        proc.stderr
    )
    rows = grades(out)
    assert set(rows) == {"alice", "bob", "carol", "dave", "erin", "smithjohn", "jsmith"}
    assert rows["smithjohn"]["score"] == AM_POINTS, rows["smithjohn"]
    assert rows["jsmith"]["masks"] == MASKS_POINTS and rows["jsmith"]["attention"] == "missing"
    assert (
        "my work/old/ also holds module files (attention.py): not graded; my work/"
        in (out / "carol" / "feedback.txt").read_text()
    )
    assert rows["alice"]["score"] == rows["alice"]["max_score"] == AM_POINTS
    assert rows["dave"]["score"] == AM_POINTS and rows["erin"]["score"] == "0"
    assert "masks.ipynb: graded as masks.py" in (out / "dave" / "feedback.txt").read_text()
    erin = (out / "erin" / "feedback.txt").read_text()
    assert "erin_LATE_1_2_masks.ipynb: no solution yet" in erin and "[not-attempted]" in erin
    assert rows["carol"]["score"] == "0"
    assert 0 < float(rows["bob"]["attention"]) < 20 and rows["bob"]["masks"] == MASKS_POINTS
    meta = json.loads((out / "batch.json").read_text())
    assert meta["tier"] == "hidden" and meta["seed"] != 20261129
    for name in rows:
        data = json.loads((out / name / "results.json").read_text())
        assert {"score", "max_score", "tests"} <= set(data)
        for test in data["tests"]:
            assert {"name", "score", "max_score", "status", "output"} <= set(test)
            assert test["name"].split(":")[0] in ("attention", "masks")
        assert (out / name / "feedback.txt").read_text().startswith("Attention Lab: " + name)
    bob = json.loads((out / "bob" / "results.json").read_text())
    assert any("no-scaling" in t["tags"] for t in bob["tests"])
    carol = (out / "carol" / "feedback.txt").read_text()
    assert "[not-attempted]" in carol and "TODO" in carol


def test_no_attack_gains_a_point_in_batch_mode(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in attack_names():
        stage_attack(name, subs)
    shutil.copytree(SOLUTIONS, subs / "zz_control", ignore=shutil.ignore_patterns("__pycache__"))
    # Links, at the top of SUBMISSIONS and inside a submission, to the solutions: refused.
    (subs / "linked").symlink_to(SOLUTIONS)
    (subs / "links_inside").mkdir()
    (subs / "links_inside" / "attention.py").symlink_to(SOLUTIONS / "attention.py")
    (subs / "links_inside" / "sub").symlink_to(SOLUTIONS)
    build_results = ROOT / "build" / "results.json"
    before = build_results.stat().st_mtime if build_results.exists() else None
    out = tmp_path / "out"
    # 3 CPU-s per check: the control must finish its first check (lazy first-use costs) beside
    # the attacks on a 2-core machine; the endless loop still ends at the 10 s budget.
    batch(subs, out, "--timeout", "10", "--check-timeout", "3", "--memory", "512")
    rows = grades(out)
    assert rows.pop("zz_control")["score"] == AM_POINTS  # the sandbox itself costs nothing
    linked, inside = rows.pop("linked"), rows.pop("links_inside")
    assert linked["score"] == "not graded" and inside["score"] == "0"
    assert "symbolic link" in linked["notes"], linked
    inside_text = (out / "links_inside" / "feedback.txt").read_text()
    assert "attention.py is a link" in inside_text and "sub is a link to a folder" in inside_text
    for name, row in rows.items():
        assert row["score"] == "0", f"attack {name} gained {row['score']} points"
        text = (out / name / "feedback.txt").read_text() + (out / name / "results.json").read_text()
        for fragment in reported(name):
            assert fragment in text, f"attack {name}: {fragment!r} not reported"
        assert "KITLEAK" not in text, f"attack {name} reached the kit: {text[:2000]}"
    # Nothing the attacks wrote landed where grades are read; no process of theirs survives.
    names = sorted(p.name for p in out.iterdir() if p.is_file())
    assert names == ["batch.json", "grades.csv", "seeds.csv"]
    assert not (out / "results.json").exists()
    assert (build_results.stat().st_mtime if build_results.exists() else None) == before
    assert not sandbox_processes()
    time.sleep(1)  # a daemon that outlived the grading would write again by now
    assert not leaked_files()
    # No secret of the grader reaches what students see; nothing else of the machine either.
    assert TOKEN not in output_text(out)
    # No control character a student chose reaches an output (terminal escapes, \r, NUL...).
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode(errors="replace").replace("\r\n", "\n")  # csv's
            bad = sorted({ch for ch in text if unicodedata.category(ch)[0] == "C"} - set("\n\t"))
            assert not bad, f"{path.relative_to(out)} holds control characters {bad}"
    # The hidden seed is nowhere in the sandboxed process: not in a frame, an object, /proc
    # or a descriptor (before, the zygote's request bytes on the stack held it).
    with open(out / "seeds.csv") as f:
        hunted = {r["student"]: r["seed"] for r in csv.DictReader(f)}["seed_hunt"]
    hunt = (out / "seed_hunt" / "feedback.txt").read_text()
    assert "SEEDHUNT keyed:" in hunt and hunted not in hunt, hunt[-3000:]
    secrets_feedback = (out / "read_secrets" / "feedback.txt").read_text()
    assert "LEAK readable" not in secrets_feedback and "--submissions" not in secrets_feedback
    assert str(ROOT) + "/solutions" not in secrets_feedback
    # Each attack is plainly reported.
    assert "[exited-early]" in (out / "exit_at_import" / "feedback.txt").read_text()
    assert "used up its 10 s" in rows["infinite_loop"]["notes"]
    fake = (out / "fake_passed" / "feedback.txt").read_text()
    assert "  | Total: 29 / 29 points" in fake and "bytes left out" in fake  # its own text
    assert f"Total: 0 / {AM_POINTS} points" in fake
    if os.geteuid() == 0:  # the namespace sandbox: solutions/ cannot be read
        meta = json.loads((out / "batch.json").read_text())
        assert meta["isolation"] == "namespace", meta


@pytest.mark.parametrize("name", ["stored_answers", "read_solutions"])
def test_answer_stealing_attacks_are_real_outside_the_sandbox(tmp_path, name):
    """Graded in-process on the public tier these attacks score: only the sandbox (no
    solutions/) and the hidden tier (fresh inputs) stop them, as the test above shows."""
    results = grade_folder(stage_attack(name, tmp_path), ["attention"])
    assert sum(r.score for r in results) > 0


# --------------------------------------------------------------------------- hostile input


@pytest.mark.fast
def test_parser_survives_deep_nesting_and_fields_are_typed():
    deep = b"[" * 200_000 + b"]" * 200_000
    raw = struct.pack("<4sII", b"ALAB", len(deep), 0) + deep
    good = wire.frame({"type": "start", "check": "attention.reference"})
    messages, note = wire.parse(good + raw + good)
    assert len(messages) == 1 and "nests deeper" in note  # no RecursionError
    brackets_in_a_string = wire.frame({"type": "result", "message": "[" * 5000})
    assert wire.parse(brackets_in_a_string) == (
        [({"type": "result", "message": "[" * 5000}, b"")],
        "",
    )
    assert _malformed(
        "result", {"status": ["passed"], "misconception": "", "message": "", "hint": ""}
    )
    assert _malformed("outputs", {"outputs": "all passed"})
    assert "got nothing" in _malformed("result", {})
    assert not _malformed("outputs", {"outputs": {}})


@pytest.mark.fast
def test_csv_cells_are_one_line_and_never_formulas():
    assert batch_module.cell('=HYPERLINK("http://x","y")').startswith("'=")
    for lead in "=+-@\t":
        assert not batch_module.cell(lead + "x").startswith(lead)
    assert "\n" not in batch_module.cell("a\nInstructor override: every check passed\r\nb")
    assert batch_module.plain("x\u202eyp.py") == "x\\u202eyp.py"


def patch_zip(path: Path, *, flags: int = 0, method: int | None = None, rename=None) -> None:
    """Rewrite a .zip's local and central headers: OR in flag bits, set the compression
    method, replace name bytes (what zipfile cannot write: encrypted, non-UTF-8 names)."""
    data = bytearray(path.read_bytes())
    if rename:
        data = bytearray(bytes(data).replace(*rename))
    for signature, flag_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        at = data.find(signature)
        while at >= 0:
            (old,) = struct.unpack_from("<H", data, at + flag_at)
            struct.pack_into("<H", data, at + flag_at, old | flags)
            if method is not None:
                struct.pack_into("<H", data, at + method_at, method)
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))


def solution_zip(path: Path, extra: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for module in ("attention", "masks"):
            zf.write(SOLUTIONS / f"{module}.py", f"{module}.py")
        for name, text in (extra or {}).items():
            zf.writestr(name, text)
    return path


def test_batch_survives_every_bad_upload(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(SOLUTIONS, subs / "alice", ignore=ignore)
    shutil.copytree(SOLUTIONS, subs / "grades.csv", ignore=ignore)  # a folder named grades.csv
    patch_zip(solution_zip(subs / "password.zip"), flags=0x1)
    patch_zip(solution_zip(subs / "aes.zip"), flags=0x1, method=99)
    patch_zip(
        solution_zip(subs / "latin1.zip", {"cafX.py": "x = 1\n"}),
        flags=0x800,
        rename=(b"cafX", b"caf\xe9"),
    )
    (subs / "corrupt.zip").write_bytes(b"PK\x03\x04 not really a zip")
    forged = {
        '=HYPERLINK("http://evil.example","x")/../a.py': "",
        "b\nInstructor override: every check passed\n.py": "",
    }
    solution_zip(subs / "@SUM(1+1).zip", forged)
    out = tmp_path / "out"
    proc = batch(subs, out)
    assert "graded 7 submissions" in proc.stdout and "4 not graded" in proc.stdout
    with open(out / "grades.csv", newline="") as f:
        table = list(csv.reader(f))
    rows = {row[0]: row for row in table[1:]}
    assert len(rows) == 7, rows
    assert rows["alice"][1] == rows["alice"][2] == AM_POINTS
    assert rows["grades.csv_"][1] == AM_POINTS  # graded like anyone (its folder renamed)
    assert (out / "grades.csv").is_file() and (out / "grades.csv_" / "results.json").is_file()
    for name, why in (
        ("password", "password-protected"),
        ("aes", "AES-encrypted"),
        ("latin1", "not valid UTF-8"),
        ("corrupt", "not a valid .zip"),
    ):
        assert rows[name][1] == "not graded" and why in rows[name][-1], rows[name]
        assert why in json.loads((out / name / "results.json").read_text())["output"]
    # Student-derived text: never a formula, never more than one line.
    for row in table[1:]:
        for text in (row[0], row[-1]):
            assert not text.startswith(("=", "+", "-", "@", "\t", "\r")), row
            assert "\n" not in text and "\r" not in text
    forged_row = [r for r in table[1:] if "SUM" in r[0]][0]
    assert forged_row[0].startswith("'@") and forged_row[1] == AM_POINTS
    assert "HYPERLINK" in forged_row[-1] and "b\\nInstructor override" in forged_row[-1]
    feedback = next(out.glob("*SUM*")).joinpath("feedback.txt").read_text()
    assert not any(line.strip().startswith("Instructor override") for line in feedback.splitlines())


def test_a_grader_error_costs_one_student(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("alice", "bob"):
        shutil.copytree(SOLUTIONS, subs / name, ignore=shutil.ignore_patterns("__pycache__"))
    real = batch_module.package_folder

    def broken(folder: Path) -> Path:
        if folder.name == "bob":
            raise RuntimeError("a grader bug")
        return real(folder)

    monkeypatch.setattr(batch_module, "package_folder", broken)
    graded = batch_module.run(subs, tmp_path / "out", modules=["masks"], progress=False, jobs=1)
    by_name = {g.name: g for g in graded}
    assert by_name["alice"].score == float(MASKS_POINTS) and not by_name["alice"].not_graded
    assert "RuntimeError: a grader bug" in by_name["bob"].not_graded
    rows = grades(tmp_path / "out")
    assert rows["bob"]["score"] == "not graded" and rows["alice"]["score"] == MASKS_POINTS


def test_two_batches_at_once_do_not_touch_each_other(tmp_path):
    """Each run gets its own sandbox uids (locked for its lifetime), so one run's clean-up
    never kills the other's students."""
    procs, outs = [], []
    for run in ("one", "two"):
        subs = tmp_path / run / "subs"
        subs.mkdir(parents=True)
        for name in ("alice", "bob"):
            shutil.copytree(SOLUTIONS, subs / name, ignore=shutil.ignore_patterns("__pycache__"))
        stage_attack("spawn_processes", subs)
        out = tmp_path / run / "out"
        outs.append(out)
        cmd = batch_cmd(subs, out, "--jobs", "2", "--quiet")
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=batch_env(), stderr=subprocess.PIPE))
    for proc in procs:
        assert proc.wait(timeout=600) == 0, proc.stderr.read()[-3000:]
        proc.stderr.close()
    uids = []
    for out in outs:
        rows = grades(out)
        assert rows["alice"]["score"] == rows["bob"]["score"] == AM_POINTS, rows
        uids.append(set(json.loads((out / "batch.json").read_text())["uids"]))
    assert not uids[0] & uids[1]
    assert not sandbox_processes()


def test_fails_closed_unless_insecure(tmp_path):
    """Without a seccomp binding (or namespaces, or cgroups) the batch refuses, naming what
    is missing; --insecure grades anyway and every result says so."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "pyseccomp.py").write_text("raise ImportError('libseccomp is not installed')\n")
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(SOLUTIONS, subs / "alice", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": f"{fake}:{ROOT}"}
    refused = batch(subs, tmp_path / "out", ok=False, **env)
    assert refused.returncode == 2 and not (tmp_path / "out" / "grades.csv").exists()
    assert "pyseccomp" in refused.stderr and "--insecure" in refused.stderr
    out = tmp_path / "insecure"
    batch(subs, out, "--insecure", **env)
    assert (
        "INSECURE" in grades(out)["alice"]["notes"] and "pyseccomp" in grades(out)["alice"]["notes"]
    )
    assert "INSECURE" in json.loads((out / "alice" / "results.json").read_text())["output"]
    assert json.loads((out / "batch.json").read_text())["insecure"] is True
    # A machine without mount namespaces (CAP_SYS_ADMIN): the interpreter behind a 0700
    # home, or solutions/ readable by others, is refused (it used to fall back to "none").
    no_ns = batch(subs, tmp_path / "out2", ok=False, ATTENTION_LAB_SANDBOX_MODE="uid")
    assert no_ns.returncode == 2 and "--insecure" in no_ns.stderr
    if os.geteuid() == 0:
        assert "mount namespaces (CAP_SYS_ADMIN)" in no_ns.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids need root")
@pytest.mark.fast
def test_uid_pools_are_disjoint_and_skip_foreign_processes():
    first = jail.UidPool(2)
    try:
        # A process already running under the next free uid (another tool, a crashed run):
        # that uid is skipped, and the process is left alone.
        busy = first.uids[-1] + 1
        pid = os.fork()
        if pid == 0:
            os.setresuid(busy, busy, busy)
            time.sleep(30)
            os._exit(0)
        try:
            for _ in range(100):
                if jail._processes_of(busy):
                    break
                time.sleep(0.05)
            second = jail.UidPool(2)
            try:
                assert not set(first.uids) & set(second.uids)
                assert busy not in second.uids
                assert os.waitpid(pid, os.WNOHANG) == (0, 0)  # still running
            finally:
                second.close()
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    finally:
        first.close()


COLLUDE_GIVER = """
import hashlib, os, pathlib, torch
_SHARED = [pathlib.Path(d) / "attention-lab-collude" for d in ("/tmp", "/dev/shm", "/var/tmp")]


def _key(*tensors):
    return hashlib.sha1(b"".join(t.numpy().tobytes() for t in tensors if t is not None)).hexdigest()


def _share(fn):
    def wrapped(q, k, v, *rest, **named):
        got = fn(q, k, v, *rest, **named)
        for folder in _SHARED:
            try:
                folder.mkdir(mode=0o777, exist_ok=True)
                os.chmod(folder, 0o777)
                torch.save(got, folder / _key(q, k, v, *rest, *named.values()))
            except Exception:
                pass
        return got
    return wrapped


scaled_dot_product_attention = _share(scaled_dot_product_attention)
attention_with_bias = _share(attention_with_bias)
"""

COLLUDE_TAKER = '''
"""No implementation: answers read from a classmate graded in the same batch."""
import hashlib, pathlib, torch
_SHARED = [pathlib.Path(d) / "attention-lab-collude" for d in ("/tmp", "/dev/shm", "/var/tmp")]


def _key(*tensors):
    return hashlib.sha1(b"".join(t.numpy().tobytes() for t in tensors if t is not None)).hexdigest()


def _lookup(q, k, v, *rest):
    for folder in _SHARED:
        try:
            got = torch.load(folder / _key(q, k, v, *rest))
        except Exception:
            continue
        print("KITLEAK shared answer")
        return got
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def scaled_dot_product_attention(q, k, v, mask=None):
    return _lookup(q, k, v, mask)


def attention_with_bias(q, k, v, bias, mask=None):
    return _lookup(q, k, v, bias, mask)
'''


def test_two_colluding_submissions_share_nothing(tmp_path):
    """Issue 12: one hidden seed served a whole batch, and two students shared answers
    through a world-writable temporary folder (the one with no implementation got 20/20).
    Now each student has their own seed (seeds.csv, never in their feedback) and a private
    /tmp and /dev/shm: the giver keeps its honest points, the taker gets none."""
    subs = tmp_path / "subs"
    (subs / "a_giver").mkdir(parents=True)
    (subs / "b_taker").mkdir()
    giver = (SOLUTIONS / "attention.py").read_text() + COLLUDE_GIVER
    (subs / "a_giver" / "attention.py").write_text(giver)
    (subs / "b_taker" / "attention.py").write_text(COLLUDE_TAKER)
    out = tmp_path / "out"
    batch(subs, out, "--jobs", "1")
    rows = grades(out)
    assert rows["a_giver"]["attention"] == "20" and rows["b_taker"]["attention"] == "0", rows
    assert "KITLEAK" not in (out / "b_taker" / "feedback.txt").read_text()
    with open(out / "seeds.csv") as f:
        student_seeds = {row["student"]: row["seed"] for row in csv.DictReader(f)}
    assert set(student_seeds) == {"a_giver", "b_taker"}
    assert len(set(student_seeds.values())) == 2
    assert json.loads((out / "batch.json").read_text())["seed"].startswith("per-student")
    for name, seed in student_seeds.items():
        seen = (out / name / "feedback.txt").read_text() + (out / name / "results.json").read_text()
        assert seed not in seen
    assert not any(Path(d, "attention-lab-collude").exists() for d in ("/tmp", "/dev/shm"))


@pytest.mark.fast
def test_each_module_view_holds_its_probe_side_and_its_dependencies_stand_ins_only():
    """view.allowed(m): what the sandboxed process grading m can open or import of the kit."""
    from autograder.run.sandbox import view

    for module in _registry.modules():
        files = {p.relative_to(view.PACKAGE).as_posix() for p in view.allowed(module)}
        assert f"trusted/{module}.py" not in files, module
        assert not [f for f in files if "judge" in f or "fixtures" in f], module
        assert {p.name for p in _registry.probe_files_of(module)} <= {
            f.rsplit("/", 1)[-1] for f in files if f.startswith(f"checks/{module}/")
        }
        stand_ins = {f.removeprefix("trusted/") for f in files if f.startswith("trusted/")}
        assert stand_ins - {"__init__.py"} == {f"{m}.py" for m in view.depends_on(module)}
        # Imported after the fork (from the view), never by the zygote: no probe, no stand-in.
        assert not [
            f
            for f in view.base_files()
            if "checks/" in str(f) or "trusted/" in str(f) and not str(f).endswith("__init__.py")
        ]
    assert view.depends_on("gpt") == ["masks", "multihead", "positional", "blocks"]


# What attention.py may do to the process it is graded in; the modules graded after it must
# not notice: each module is graded in a fresh fork of the zygote (runner.py). When modules
# shared a process, "dtype" cost positional and modern_blocks points, "patch" and "thread"
# masks points; "linear", "kit_class" and "code" went unseen by the state check there (it
# compared module attributes only, and student code could have switched it off).
POISONS = {
    "linear": (
        "torch.nn.Linear.forward = (\n"
        "    lambda self, x: torch.zeros(*x.shape[:-1], self.out_features)\n"
        ")"
    ),
    "kit_class": (  # the probe runner every module's checks go through
        "from autograder.run import probing\nprobing.Attempts.__call__ = lambda self, *a, **k: {}"
    ),
    "code": (  # a function's code swapped in place: the same object, another body
        "import torch.nn.functional as F\n"
        "def _flat(input, dim=None, *a, **k):\n"
        "    return torch.zeros_like(input)\n"
        "F.softmax.__code__ = _flat.__code__"
    ),
    "audit": "import sys\nsys.addaudithook(lambda event, args: None)",
    "dtype": "torch.set_default_dtype(torch.float64)",
    "patch": "torch.Tensor.triu = lambda self, *a, **k: self\ntorch.ones = torch.zeros",
    "thread": (  # waits until masks is imported, then patches torch under it
        "import sys, threading, time\n"
        "def later():\n"
        "    while not any(m.endswith('.masks') for m in list(sys.modules)):\n"
        "        time.sleep(0.001)\n"
        "    torch.ones = torch.zeros\n"
        "threading.Thread(target=later, daemon=True).start()"
    ),
    "exit": "import os\nos._exit(0)",
    "modules": "import sys\nsys.modules['autograder.run.probing'] = 0",  # not even a module
}
GROUP_0 = ["attention", "masks", "positional", "modern_blocks"]


def test_a_module_that_changes_its_process_costs_no_other_module_a_point(tmp_path):
    """Whatever attention.py does to its process at import (torch's switches, a patched torch
    or nn.Linear, a kit class's method, a function's code, an audit hook, a thread left
    running, ending the process), the modules graded after it keep every point, and
    attention scores what it scores graded alone."""
    subs = tmp_path / "subs"
    shutil.copytree(SOLUTIONS, subs / "control", ignore=shutil.ignore_patterns("__pycache__"))
    for name, code in POISONS.items():
        folder = subs / name
        shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
        source = (folder / "attention.py").read_text()
        (folder / "attention.py").write_text(f"{source}\nimport torch\n{code}\n")
    together, alone = tmp_path / "together", tmp_path / "alone"
    batch(subs, together, "--seed", "5", "--ex", ",".join(GROUP_0))
    batch(subs, alone, "--seed", "5", "--ex", "attention")
    full = {m: f"{sinks.module_max(m):g}" for m in GROUP_0}
    rows, alone_rows = grades(together), grades(alone)
    control = rows.pop("control")
    assert {m: control[m] for m in GROUP_0} == full
    for name, row in rows.items():
        assert {m: row[m] for m in GROUP_0[1:]} == {m: full[m] for m in GROUP_0[1:]}, name
        assert row["attention"] == alone_rows[name]["attention"], (name, row, alone_rows[name])
    assert rows["exit"]["attention"] == "0"
    assert [n for n, row in rows.items() if row["notes"]] == ["exit"]  # no one else's note
    assert not sandbox_processes()


def test_hidden_references_come_from_a_trusted_fork_of_the_zygote(tmp_path):
    """The sandbox computes each student's hidden references in a reference server, a fork of
    its warm zygote (reference_fork.py): the same outputs as computing them here, for every
    fast check whose verdict reads one, CPU seconds recorded for every fast check; a module
    whose solution cannot be imported is an error for that module only, and the grader's own
    process never imports solutions/. Servers forked at the zygote's start answer first."""
    from autograder.core.references import References
    from autograder.run.sandbox.zygote import Zygote

    seed = 4242
    modules = ["attention", "masks", "multihead", "diagnostics"]
    broken = tmp_path / "solutions"
    shutil.copytree(SOLUTIONS, broken, ignore=shutil.ignore_patterns("__pycache__"))
    (broken / "masks.py").write_text("raise ImportError('no masks here')\n")
    with Zygote(warm_up=False, servers=2) as zygote:
        # Two servers forked at the start: the first request takes one; the spare one,
        # never asked for, ends when its socket closes.
        spare = zygote._early.get_nowait()
        spare_pid = int(spare.recv(64))
        spare.close()
        found, cpu, errors = zygote.references(modules, seed, SOLUTIONS)
        _, _, broken_errors = zygote.references(modules, seed, broken)
        # The server that answered is kept (solutions/ imported once) and answers the same
        # request with the same outputs; one that died while idle is replaced.
        servers = set(zygote._servers)
        assert len(servers) == 1
        again, again_cpu, again_errors = zygote.references(modules, seed, SOLUTIONS)
        assert set(zygote._servers) == servers and again_errors == {}
        os.kill(servers.pop(), 9)
        time.sleep(0.2)
        replaced, _, replaced_errors = zygote.references(["attention"], seed, SOLUTIONS)
        assert replaced_errors == {} and set(zygote._servers).isdisjoint(servers)
        for _ in range(50):  # the spare server is gone (reaped by the zygote)
            if not os.path.exists(f"/proc/{spare_pid}"):
                break
            time.sleep(0.1)
        assert not os.path.exists(f"/proc/{spare_pid}")
    for module in modules:
        for slug, outputs in found[module].items():
            for key, value in outputs.items():
                same = again[module][slug][key]
                if isinstance(value, torch.Tensor):  # NaN where a replayed mistake has it
                    torch.testing.assert_close(same, value, equal_nan=True)
                else:
                    assert same == value, f"{module}.{slug}.{key}"
    assert replaced["attention"].keys() == found["attention"].keys()
    assert errors == {} and set(found) == set(modules)
    assert set(broken_errors) == {"masks"} and "no masks here" in broken_errors["masks"]
    here = References.hidden(seed)
    skipped: set[str] = set()
    for module in modules:
        expected = here.module(module)
        # Only the checks whose verdicts read a reference get one (core.Check.compares);
        # every fast check gets its CPU seconds, the time limits' calibration.
        reading = {c.slug for c in _registry.checks_of(module) if c.compares and not c.slow}
        assert set(found[module]) == reading and set(cpu[module]) == set(expected), module
        skipped |= set(expected) - reading
        assert set(again_cpu[module]) == set(cpu[module]), module
        for slug in reading:
            outputs, got = expected[slug], found[module][slug]
            assert set(got) == set(outputs), f"{module}.{slug}"
            for key, value in outputs.items():
                if isinstance(value, torch.Tensor):
                    assert got[key].dtype == value.dtype and got[key].shape == value.shape
                    # thread counts differ; NaN where a replayed mistake has it
                    torch.testing.assert_close(got[key], value, equal_nan=True)
                else:
                    assert got[key] == value, f"{module}.{slug}.{key}"
    assert {"ln-placement", "sqrtdk-finding"} <= skipped  # diagnostics' verdicts read none
    probe = (
        "import sys; from pathlib import Path\n"
        "from autograder.run.sandbox.zygote import Zygote\n"
        "with Zygote(warm_up=False) as z:\n"
        "    found, _, errors = z.references(['attention'], 7, Path('solutions').resolve())\n"
        "assert found['attention'] and not errors\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'solutions'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
