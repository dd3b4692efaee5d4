"""`make watch`: re-grades a module when it is saved; nothing in the student's file kills it.

One watcher process, driven as a student would: save a correct file, a syntax error, an
endless loop, a file that calls os._exit, then Ctrl-C (SIGINT). No timing is asserted (the
machines are noisy): each step waits, with a generous limit, for the lines it expects.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT, SOLUTIONS, submission_with

from autograder.authoring import stubgen
from autograder.core import registry
from autograder.core.check import Result
from autograder.feedback import publish

MASKS_POINTS = sum(c.points for c in registry.checks_of("masks") if not c.slow)

WAIT = 180.0  # seconds a step may take on a loaded 2-core machine before the test fails


class Watch:
    def __init__(self, folder, results):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "autograder", "watch", "--submission", str(folder)]
            + ["--ex", "masks", "--results", str(results), "--cpu-limit", "3"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # started as a script's background job is, with SIGINT ignored: Ctrl-C (the
            # test's SIGINT) must stop it all the same (it hung until killed before)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")  # end of output

    def until(self, *needles: str) -> str:
        """The output from now until a line holding the last needle; asserts all appeared."""
        got, deadline = [], time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            if line == "":
                break
            got.append(line)
            if needles[-1] in line:
                break
        text = "".join(got)
        self.seen.append(text)
        for needle in needles:
            assert needle in text, f"expected {needle!r} in the watcher's output:\n{text}"
        return text


def _save(path, text):
    before = path.stat().st_mtime_ns
    path.write_text(text)
    if path.stat().st_mtime_ns == before:  # a coarse file-system clock: move it on
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="make watch forks a child per grading")
def test_watch_regrades_on_save_survives_bad_code_and_stops_on_ctrl_c(tmp_path):
    stub = stubgen.generate(SOLUTIONS)["masks.py"]
    folder = submission_with(tmp_path, {"masks": stub})
    masks, results = folder / "masks.py", tmp_path / "build" / "results.json"
    # attention, graded earlier (as make grade EX=attention leaves it): the watcher merges
    attention = [Result.of(c, "passed") for c in registry.checks_of("attention") if not c.slow]
    earlier = publish.publish(
        attention,
        submission=folder,
        results_path=results,
        hints=None,
        sections=None,
        graded_at="2026-01-02T03:04:05+00:00",
        title="T",
        full=False,
    )
    watch = Watch(folder, results)
    try:
        watch.until("masks.py", "[not-attempted]", f"Total: 0 / {MASKS_POINTS:g}", "Watching")
        assert (tmp_path / "build" / "report.html").is_file()

        solution = (SOLUTIONS / "masks.py").read_text()
        _save(masks, solution)
        watch.until(
            "masks.py changed",
            f"Total: {MASKS_POINTS:g} / {MASKS_POINTS:g} points (all checks passed)",
            "Watching",
        )
        data = json.loads(results.read_text())
        scores = {t["name"]: t["score"] for t in data["tests"] if t["name"].startswith("masks: ")}
        assert sum(scores.values()) == MASKS_POINTS
        kept = [t for t in data["tests"] if t["name"].startswith("attention: ")]
        kept = [{k: v for k, v in t.items() if k != "extra_data"} for t in kept]
        assert kept == earlier.parts[0].tests  # kept as graded, with its time
        assert data["score"] == MASKS_POINTS + earlier.score
        assert data["extra_data"]["modules"]["attention"]["graded_at"].startswith("2026-01-02")
        page = (tmp_path / "build" / "report.html").read_text()
        assert '<section id="attention">' in page and "graded 2026-01-02 03:04:05" in page

        _save(masks, solution + "\ndef broken(:\n")
        watch.until("masks.py changed", "[import-error]", "SyntaxError", "Watching")

        # an endless loop in causal_mask: one limit, its later checks "same as above" at once
        loop = solution.replace(
            "    return torch.ones(L, L",
            "    while True:\n        pass\n    return torch.ones(L, L",
        )
        assert loop != solution
        _save(masks, loop)
        causal = [c for c in registry.checks_of("masks") if c.exercise == "causal_mask"]
        assert len(causal) > 1
        text = watch.until(
            "masks.py changed",
            "TIME",
            f"Total: {MASKS_POINTS - sum(c.points for c in causal):g} / {MASKS_POINTS:g}",
            "Watching",
        )
        assert text.count("[timeout]") == 1 and "[timeout-same-as-above]" in text
        assert text.count("TIME  ") == len(causal)

        _save(masks, "import os\nos._exit(3)\n")
        watch.until("masks.py changed", "[exited-early]", "exit status 3", "Watching")

        _save(masks, solution)  # the watcher is still alive: it grades again
        watch.until("masks.py changed", f"Total: {MASKS_POINTS:g} / {MASKS_POINTS:g}", "Watching")

        watch.proc.send_signal(signal.SIGINT)
        assert watch.proc.wait(timeout=WAIT) == 0
        watch.until("watch: stopped.")
    finally:
        if watch.proc.poll() is None:
            watch.proc.kill()
            watch.proc.wait()
    assert "Traceback" not in "".join(watch.seen)
