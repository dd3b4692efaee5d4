"""build/report.html: self-contained, offline, with pictures of the student's own outputs.

The browser test opens the report of a half-done submission in headless Chromium (Debian
package `chromium`; `.ci/run` installs it) and checks, from Chromium's own network log, that
the page makes no request, and from the DOM, that every image rendered. Without Chromium
that test is skipped, and says so.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from conftest import KIT, SOLUTIONS, submission_with

from autograder.authoring import stubgen
from autograder.core.references import References
from autograder.feedback import report_html
from autograder.run.submission import Submission

MODULES = ["attention", "multihead", "positional", "gpt", "plots"]


def _half_done(tmp_path):
    """attention without the √d_k (a mutant), plots not attempted, the rest correct."""
    stubs = stubgen.generate(SOLUTIONS)
    buggy = (KIT / "mutants" / "attention" / "no_scaling.py").read_text()
    return submission_with(tmp_path, {"attention": buggy, "plots": stubs["plots.py"]})


def _graded(submission, modules):
    """Results and what the student's code returned, as make grade's plugin gets them."""
    from autograder.core import registry
    from autograder.core.references import References
    from autograder.run import engine

    refs, probed, results = References.public(), {}, []
    for m in modules:
        checks = [c for c in registry.checks_of(m) if not c.slow]
        results += engine.grade_module(checks, submission, refs, outputs=probed)
    return results, probed


@pytest.fixture(scope="module")
def half_done(tmp_path_factory):
    """(folder for pages, the submission, its results, what its code returned), graded once."""
    tmp = tmp_path_factory.mktemp("report")
    submission = Submission(_half_done(tmp))
    results, probed = _graded(submission, MODULES)
    return tmp, submission, results, probed


@pytest.fixture(scope="module")
def report(half_done):
    tmp, submission, results, probed = half_done
    sections = report_html.sections(results, submission, probed=probed)
    path = report_html.write(tmp / "report.html", results, sections, "Attention Lab: half done")
    return path, path.read_text(), results


def test_the_report_holds_the_table_messages_and_hints(report):
    _, text, results = report
    failing = [r for r in results if not r.passed and r.status != "not attempted"]
    assert failing and any(r.misconception == "no-scaling" for r in failing)
    for r in failing:
        assert f"[{r.misconception}]" in text
    assert "Hint: " in text and "no-scaling" in text
    for module in MODULES:
        assert f'<section id="{module}">' in text


def test_pictures_come_from_the_students_code_with_reference_and_difference(report):
    _, text, _ = report
    images = re.findall(r'<img[^>]*src="([^"]*)"', text)
    assert len(images) > 20 and all(src.startswith("data:image/png;base64,") for src in images)
    attention = text.split('<section id="attention">')[1].split("</section>")[0]
    # no_scaling gives different weights: the difference map says by how much
    assert "largest " in attention and "|yours − reference|" in attention
    multihead = text.split('<section id="multihead">')[1].split("</section>")[0]
    assert "head 0" in multihead and "head 1" in multihead and "identical" in multihead
    positional = text.split('<section id="positional">')[1].split("</section>")[0]
    assert "sinusoidal_encoding(max_len, d_model)" in positional and "Not drawn" not in positional
    assert "identical" in positional and "layer 1" in text
    plots = text.split('<section id="plots">')[1].split("</section>")[0]
    assert "placeholder" in plots and "is not attempted yet" in plots


def test_every_picture_of_every_module_is_drawn_for_the_solutions():
    """solutions/: each picture shows the student's side, the reference and their difference,
    and none says "Not drawn" (a picture that reads an output its check's probe does not
    return draws nothing, for everyone: positional's once asked for "small")."""
    from autograder.core import fixtures, registry
    from autograder.run import engine

    submission, refs, probed = Submission(SOLUTIONS), References.public(), {}
    for module, pictures in report_html.PICTURES.items():
        check_of = {c.slug: c for c in registry.checks_of(module)}
        assert {p.slug for p in pictures} <= set(check_of), module
        checks = [check_of[slug] for slug in dict.fromkeys(p.slug for p in pictures)]
        results = {
            r.check_id: r for r in engine.grade_module(checks, submission, refs, outputs=probed)
        }
        stored = fixtures.load(module)
        for picture in pictures:
            check = check_of[picture.slug]
            assert results[check.id].passed, results[check.id].message
            part = report_html.picture_html(
                picture, check, results[check.id], submission, stored, probed
            )
            where = f"{module}: {picture.caption}"
            assert 'class="note"' not in part and "not drawn" not in part.lower(), (where, part)
            if picture.kind == "curves":
                assert part.count("<polyline") == 2 * len(picture.keys), where
            else:
                assert "|yours − reference|" in part and "identical" in part, where
                assert not re.search(r"largest \d", part), where  # the solutions' outputs


def test_the_sqrt_dk_curves_are_drawn_as_inline_svg():
    from autograder.core import fixtures, registry
    from autograder.run import engine

    (picture,) = [p for p in report_html.PICTURES["diagnostics"] if "entropy" in p.keys[0]]
    check = {c.slug: c for c in registry.checks_of("diagnostics")}[picture.slug]
    submission = Submission(SOLUTIONS)
    probed: dict = {}
    (result,) = engine.grade_module([check], submission, References.public(), outputs=probed)
    part = report_html.picture_html(
        picture, check, result, submission, fixtures.load("diagnostics"), probed
    )
    assert part.count("<polyline") == 4 and "scaled (yours)" in part


def test_a_picture_that_cannot_be_drawn_says_why(tmp_path):
    from autograder.core import fixtures, registry
    from autograder.run import engine

    picture = report_html.PICTURES["attention"][0]
    check = {c.slug: c for c in registry.checks_of("attention")}[picture.slug]
    folder = submission_with(
        tmp_path,
        {
            "attention": "def scaled_dot_product_attention(q, k, v, mask=None):\n"
            "    return q, 'not a tensor'\n"
        },
    )
    submission = Submission(folder)
    probed: dict = {}
    (result,) = engine.grade_module([check], submission, References.public(), outputs=probed)
    stored = fixtures.load("attention")
    part = report_html.picture_html(picture, check, result, submission, stored, probed)
    assert "Your output could not be drawn" in part and "is str, not a tensor" in part


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _open(browser: str, page, tmp_path, screenshot=None):
    """Load `page` in headless Chromium: (the DOM after load, the URLs the page requested)."""
    netlog = tmp_path / f"{page.stem}.netlog.json"
    args = [
        browser,
        "--headless",
        "--no-sandbox",  # the kit's CI runs as root
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        f"--log-net-log={netlog}",
    ]
    if screenshot:
        args += ["--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={screenshot}"]
    else:
        args += ["--dump-dom"]
    proc = subprocess.run(
        args + [page.as_uri()], capture_output=True, text=True, timeout=180, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    log = json.loads(netlog.read_text())
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    requested = []
    for event in log["events"]:
        params = event.get("params", {})
        # The browser's own background traffic (updates, time) has another isolation key;
        # a request the page makes is keyed by the page's site, file://.
        if names.get(event["type"]) == "URL_REQUEST_START_JOB" and str(
            params.get("network_isolation_key", "")
        ).startswith("file://"):
            requested.append(params.get("url", ""))
    return proc.stdout, requested


@pytest.mark.skipif(
    _chromium() is None,
    reason="headless Chromium is not installed (Debian: apt-get install chromium; .ci/run "
    "installs it), so the report is not opened in a browser here",
)
def test_the_report_renders_offline_in_headless_chromium(report, tmp_path):
    browser = _chromium()
    # The detector works: a page that loads one remote image is caught.
    probe = tmp_path / "probe.html"
    probe.write_text('<html><body><img src="http://127.0.0.1:9/x.png"></body></html>')
    _, requested = _open(browser, probe, tmp_path)
    assert any("127.0.0.1:9/x.png" in url for url in requested), requested

    path, _, _ = report
    dom, requested = _open(browser, path, tmp_path)
    network = [url for url in requested if not url.startswith(("file:", "data:"))]
    assert network == [], f"the report made network requests: {network}"
    body = re.search(r"<body[^>]*>", dom).group(0)
    rendered = int(re.search(r'data-rendered="(\d+)"', body).group(1))
    total = int(re.search(r'data-images="(\d+)"', body).group(1))
    assert total > 20 and rendered == total, body
    shot = path.with_suffix(".png")
    _open(browser, path, tmp_path, screenshot=shot)
    assert shot.stat().st_size > 10_000


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed")
def test_the_chinese_report_renders_in_headless_chromium(half_done, tmp_path):
    """The same half-done submission, worded in Simplified Chinese with every hint level; a
    screenshot to look at: build/report-zh.png."""
    from autograder.core import i18n
    from autograder.feedback import ladder

    folder, submission, results, probed = half_done
    i18n.use("zh_CN")
    try:
        sections = report_html.sections(results, submission, probed=probed, hints=ladder.ALL_LEVELS)
        path = report_html.write(
            folder / "report-zh.html", results, sections, "注意力实验：完成一半"
        )
    finally:
        i18n.use(None)
    dom, requested = _open(_chromium(), path, tmp_path)
    assert [url for url in requested if not url.startswith(("file:", "data:"))] == []
    assert '<html lang="zh-CN">' in dom
    for text in (
        "因果掩码下的注意力权重",
        "失败",
        "待做",
        "提示 1/3（思路）：",
        "还未作答",
        "|你的 − 参考|",
    ):
        assert text in dom, text
    body = re.search(r"<body[^>]*>", dom).group(0)
    rendered = int(re.search(r'data-rendered="(\d+)"', body).group(1))
    assert rendered == int(re.search(r'data-images="(\d+)"', body).group(1)) > 20
    shot = KIT.parents[1] / "build" / "report-zh.png"
    shot.parent.mkdir(exist_ok=True)
    _open(_chromium(), path, tmp_path, screenshot=shot)
    assert shot.stat().st_size > 10_000
