"""The warm grader behind `make grade` (autograder/run/warm.py): the same table, results and exit
status as a direct run, served by a fork of one warm process; Ctrl-C and a changed kit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, SOLUTIONS, submission_with

from autograder.core.settings import Settings
from autograder.run import warm

WRONG_MASK = ("triu(diagonal=1)", "triu(diagonal=0)")  # blocks the diagonal: loses points
ENDLESS = ("    lengths = torch.as_tensor(lengths)\n", "    while True:\n        pass\n")


def _env(folder: Path, on: bool) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ATTENTION_LAB_WARM": "1" if on else "0",
        "ATTENTION_LAB_WARM_DIR": str(folder),
    }


def _grade(folder, submission, results, *extra: str, on: bool = True, lang: str = ""):
    cmd = [sys.executable, "-m", "autograder", *(["--lang", lang] if lang else [])]
    cmd += ["grade", "--submission", str(submission)]
    cmd += ["--results", str(results), *extra]
    return subprocess.run(cmd, env=_env(folder, on), capture_output=True, text=True, cwd=ROOT)


def _untimed(data: dict) -> dict:
    """results.json without the times the modules were graded (two runs, two times)."""
    for t in data["tests"]:
        assert t["extra_data"].pop("graded_at")
    for entry in data["extra_data"]["modules"].values():
        assert entry.pop("graded_at")
    return data


def _served(folder: Path) -> int:
    log = folder / "warm-grader.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _server_pids(folder: Path) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if b"autograder.run.warm" in cmd and f"ATTENTION_LAB_WARM_DIR={folder}".encode() in env:
            found.append(int(pid))
    return found


@pytest.fixture
def server(tmp_path):
    folder = tmp_path / "warm"
    yield folder
    warm.stop(folder)


def _wait_for(condition, seconds: float = 90) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.2)


def test_warm_grading_equals_direct_grading_and_keeps_the_exit_status(server, tmp_path):
    masks = (SOLUTIONS / "masks.py").read_text().replace(*WRONG_MASK)
    folder = submission_with(tmp_path, {"masks": masks})
    direct = _grade(server, folder, tmp_path / "direct.json", "--ex", "masks", on=False)
    assert direct.returncode == 0 and not server.exists()  # WARM=0: no server started

    first = _grade(server, folder, tmp_path / "first.json", "--ex", "masks")
    assert first.stdout == direct.stdout.replace("direct.json", "first.json")
    _wait_for(lambda: (server / "warm-grader.sock").exists())
    assert len(_server_pids(server)) == 1

    served = _grade(server, folder, tmp_path / "served.json", "--ex", "masks")
    assert _served(server) == 1, "the second run was not served by the warm grader"
    assert served.returncode == 0, served.stderr
    assert served.stdout == direct.stdout.replace("direct.json", "served.json")
    assert "[causal-blocks-diagonal]" in served.stdout
    wanted = _untimed(json.loads((tmp_path / "direct.json").read_text()))
    assert _untimed(json.loads((tmp_path / "served.json").read_text())) == wanted

    chinese = _grade(server, folder, tmp_path / "zh.json", "--ex", "masks", lang="zh_CN")
    assert _served(server) == 2 and "总分" in chinese.stdout

    wrong = _grade(server, folder, tmp_path / "wrong.json", "--ex", "nosuchmodule")
    assert _served(server) == 3 and wrong.returncode == 2
    assert "nosuchmodule" in wrong.stderr and "nosuchmodule" in wrong.stdout + wrong.stderr


def test_ctrl_c_stops_the_grading_not_the_server(server, tmp_path):
    masks = (SOLUTIONS / "masks.py").read_text().replace(*ENDLESS)
    folder = submission_with(tmp_path, {"masks": masks})
    _grade(server, folder, tmp_path / "first.json", "--ex", "positional")
    _wait_for(lambda: (server / "warm-grader.sock").exists())
    [pid] = _server_pids(server)

    cmd = [sys.executable, "-m", "autograder", "grade", "--submission", str(folder)]
    cmd += ["--results", str(tmp_path / "r.json"), "--ex", "masks"]
    # Ctrl-C as a terminal sends it: SIGINT at its default, even where this test runs in the
    # background of a script, whose commands inherit SIGINT ignored (POSIX shells do that)
    client = subprocess.Popen(
        cmd,
        env=_env(server, True),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _wait_for(lambda: _served(server) == 1, 30)
    time.sleep(1)
    client.send_signal(signal.SIGINT)
    assert client.wait(timeout=30) == 130
    child = [p for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == pid]
    _wait_for(lambda: not [p for p in child if os.path.exists(f"/proc/{p}")], 30)
    assert _server_pids(server) == [pid]  # still up for the next run


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def test_a_changed_kit_stops_the_server_and_grades_directly(server, tmp_path, monkeypatch):
    _grade(server, SOLUTIONS, tmp_path / "first.json", "--ex", "positional")
    _wait_for(lambda: (server / "warm-grader.sock").exists())
    [pid] = _server_pids(server)
    monkeypatch.setattr(warm, "key", lambda: "another kit")
    settings = Settings(warm=True, warm_dir=server)
    assert warm.client(["grade", "--ex", "positional"], settings) is None  # grade directly
    _wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 30)
    assert not (server / "warm-grader.sock").exists()


@pytest.mark.fast
def test_only_make_grade_on_the_cpu_is_served(monkeypatch):
    on = Settings(warm=True)
    assert warm.wanted(["--lang", "zh_CN", "grade", "--device", "cpu"], on)
    assert not warm.wanted(["grade", "--device", "cuda"], on)  # CUDA: a fresh process
    assert warm.wanted(["hint", "--ex", "attention"], on)  # make hint grades the module first
    assert not warm.wanted(["batch", "--submissions", "x"], on)
    # make grade WARM=0, and python -m autograder: off
    assert not warm.wanted(["grade", "--device", "cpu"], Settings(warm=False))
    # make grade passes WARM as a flag, over the environment's ATTENTION_LAB_WARM
    for argv, environ, expected in (
        (["--warm", "0", "grade"], {"ATTENTION_LAB_WARM": "1"}, False),
        (["--warm", "1", "grade"], {"ATTENTION_LAB_WARM": "0"}, True),
        (["grade"], {"ATTENTION_LAB_WARM": "1"}, True),
        (["grade"], {}, False),
    ):
        settings = Settings.resolve(cli_args=warm.flags(argv), environ=environ)
        assert warm.wanted(argv, settings) is expected, (argv, environ)


def test_client_sends_nothing_to_a_server_of_another_user(tmp_path, monkeypatch, capsys):
    """Issue 27: the client checks SO_PEERCRED before it sends its environment and terminal
    descriptors; a socket whose owner is another user gets not one byte."""
    import socket as _socket
    import threading

    where = tmp_path / "warm"
    where.mkdir()
    listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    listener.bind(str(where / warm.SOCKET))
    listener.listen(1)
    received: list[bytes] = []
    fds_received: list[int] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(5)
            try:
                while True:
                    data, fds, _flags, _addr = _socket.recv_fds(conn, 65536, 3)
                    fds_received.extend(fds)
                    if not data:
                        return
                    received.append(data)
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    real = os.getuid()
    # The listener is this process: told its own uid is another, the client sees a foreign peer.
    monkeypatch.setattr(warm.os, "getuid", lambda: real + 1)
    settings = Settings.resolve(
        environ={"ATTENTION_LAB_WARM": "1", "ATTENTION_LAB_WARM_DIR": str(where)}
    )
    argv = ["grade", "--submission", str(SOLUTIONS)]
    assert warm.wanted(argv, settings), (
        "the client must try the socket for this test to mean anything"
    )
    assert warm.client(argv, settings) is None  # grades directly instead
    thread.join(10)
    listener.close()
    assert received == [] and fds_received == []
    assert "another user" in capsys.readouterr().err
