"""Batch grading in the sandbox (`make batch`): grades, the channel, and the attack suite."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import torch
from conftest import KIT, ROOT, SOLUTIONS, grade_folder, run_cli

from autograder.sandbox import wire

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


def batch(submissions: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    proc = run_cli(
        "batch", "--submissions", str(submissions), "--out", str(out), "--ex", MODULES, *extra
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def grades(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


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
    (subs / "notes.txt").write_text("not a submission")
    out = tmp_path / "out"
    proc = batch(subs, out)
    assert "graded 3 submissions" in proc.stdout
    rows = grades(out)
    assert set(rows) == {"alice", "bob", "carol"}
    assert rows["alice"]["score"] == rows["alice"]["max_score"] == "29"
    assert rows["carol"]["score"] == "0"
    assert 0 < float(rows["bob"]["attention"]) < 20 and rows["bob"]["masks"] == "9"
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
    build_results = ROOT / "build" / "results.json"
    before = build_results.stat().st_mtime if build_results.exists() else None
    out = tmp_path / "out"
    batch(subs, out, "--timeout", "6", "--check-timeout", "1", "--memory", "512")
    rows = grades(out)
    assert rows.pop("zz_control")["score"] == "29"  # the sandbox itself costs nothing
    for name, row in rows.items():
        assert row["score"] == "0", f"attack {name} gained {row['score']} points"
        text = (out / name / "feedback.txt").read_text() + (out / name / "results.json").read_text()
        for fragment in reported(name):
            assert fragment in text, f"attack {name}: {fragment!r} not reported"
    # Nothing the attacks wrote landed where grades are read; no process of theirs survives.
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == ["batch.json", "grades.csv"]
    assert not (out / "results.json").exists()
    assert (build_results.stat().st_mtime if build_results.exists() else None) == before
    leftover = subprocess.run(["ps", "-eo", "uid="], capture_output=True, text=True).stdout
    assert not [u for u in leftover.split() if 64000 <= int(u) < 64100]
    # Each attack is plainly reported.
    assert "[exited-early]" in (out / "exit_at_import" / "feedback.txt").read_text()
    assert "used up its 6 s" in rows["infinite_loop"]["notes"]
    fake = (out / "fake_passed" / "feedback.txt").read_text()
    assert "  | Total: 29 / 29 points" in fake and "bytes left out" in fake
    assert "Total: 0 / 29 points" in fake
    if os.geteuid() == 0:  # the namespace sandbox: solutions/ cannot be read
        meta = json.loads((out / "batch.json").read_text())
        assert meta["isolation"] == "namespace", meta


@pytest.mark.parametrize("name", ["stored_answers", "read_solutions"])
def test_answer_stealing_attacks_are_real_outside_the_sandbox(tmp_path, name):
    """Graded in-process on the public tier these attacks score: only the sandbox (no
    solutions/) and the hidden tier (fresh inputs) stop them, as the test above shows."""
    results = grade_folder(stage_attack(name, tmp_path), ["attention"])
    assert sum(r.score for r in results) > 0
