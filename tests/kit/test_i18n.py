"""English and Simplified Chinese: every text has a translation with the same placeholders,
the language follows LANG / --lang, and a missing or broken translation falls back to English.
"""

from __future__ import annotations

import gettext
import shutil
import subprocess

import pytest
from conftest import grade_cli

from autograder.authoring import catalogs
from autograder.core import check as core
from autograder.core import i18n, registry
from autograder.core.check import Result
from autograder.feedback import report

ZH = "zh_CN"
PO_FOLDER = i18n.LOCALES / ZH / "LC_MESSAGES"


def _zh_entries() -> dict[str, list[str]]:
    """{msgid: [msgstr forms]} of every zh_CN catalog (kit.po and each checks-*.po)."""
    from babel.messages.pofile import read_po

    found: dict[str, list[str]] = {}
    for po in sorted(PO_FOLDER.glob("*.po")):
        with po.open("rb") as f:
            for m in read_po(f, locale=ZH):
                if not m.id or m.fuzzy:
                    continue
                key = m.id if isinstance(m.id, str) else m.id[0]
                forms = [m.string] if isinstance(m.string, str) else list(m.string)
                if any(forms) or key not in found:
                    found[key] = forms
    return found


def _problem(english: str, forms: list[str] | None) -> str:
    if not forms or not all(f.strip() for f in forms):
        return "no translation"
    for form in forms:
        if catalogs.placeholders(form) != catalogs.placeholders(english):
            return (
                f"placeholders {sorted(catalogs.placeholders(form))} in {form!r}, "
                f"expected {sorted(catalogs.placeholders(english))}"
            )
    return ""


@pytest.fixture
def chinese():
    i18n.use(ZH)
    yield
    i18n.use(None)


@pytest.mark.fast
def test_every_misconception_has_three_hint_levels():
    missing = {
        mid: [i + 1 for i, h in enumerate(m.hints) if not h.strip()]
        for mid, m in registry.all_misconceptions().items()
    }
    missing = {mid: levels for mid, levels in missing.items() if levels}
    assert not missing, f"misconceptions with empty hint levels: {missing}"


@pytest.mark.fast
def test_every_misconception_text_has_a_chinese_translation_with_the_same_placeholders():
    entries = _zh_entries()
    problems = []
    for mid, m in registry.all_misconceptions().items():
        labelled = [("message", m.message)]
        labelled += [(f"hint {i}", h) for i, h in enumerate(m.hints, 1)]
        for label, text in labelled:
            problem = _problem(text, entries.get(text)) if text else ""
            if problem:
                problems.append(f"{mid} {label}: {problem}: {text[:70]!r}")
    assert not problems, f"{len(problems)} texts:\n" + "\n".join(problems[:40])


@pytest.mark.fast
def test_every_marked_ui_text_has_a_chinese_translation_with_the_same_placeholders():
    entries = _zh_entries()
    problems = []
    texts = [m for m, _ in catalogs.ui_texts()] + list(core.HINT_LEVELS)
    assert len(texts) > 60  # the extractor found the marked texts
    for message in texts:
        english = message if isinstance(message, str) else message[0]
        problem = _problem(
            " ".join(message) if isinstance(message, tuple) else english, entries.get(english)
        )
        if problem:
            problems.append(f"{problem}: {english!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.fast
@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is not here")
def test_the_catalogs_are_valid_gettext_files():
    for po in sorted(PO_FOLDER.glob("*.po")):
        proc = subprocess.run(
            ["msgfmt", "-c", "-o", "/dev/null", str(po)], capture_output=True, text=True
        )
        assert proc.returncode == 0, f"{po.name}: {proc.stderr}"


@pytest.mark.fast
@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, "en"),
        ({"LANG": "zh_CN.UTF-8"}, ZH),
        ({"LANG": "zh_CN.UTF-8", "LC_ALL": "en_US.UTF-8"}, "en"),
        ({"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}, ZH),
        ({"LANG": "en_US.UTF-8", "LANGUAGE": "zh_CN:en"}, ZH),
        ({"LANG": "zh_CN.UTF-8", "LANGUAGE": "C"}, ZH),  # LANGUAGE names no catalog: LANG
        ({"LANG": "zh"}, ZH),
        ({"LANG": "C.UTF-8"}, "en"),
        ({"LANG": "fr_FR.UTF-8"}, "en"),
    ],
)
def test_the_language_follows_gettexts_variables(env, expected):
    assert i18n.from_environment(env) == expected


@pytest.mark.fast
def test_use_overrides_the_environment(monkeypatch):
    monkeypatch.setenv("LANGUAGE", "en")
    assert i18n.use("zh_CN.UTF-8") == ZH and i18n.current() == ZH
    assert i18n.use(None) == "en"


def _failure(misconception, **details) -> Result:
    return Result.of(_Check(), "failed", core.Failure(misconception, **details))


class _Check:
    id, name, module, points = "attention.x", "attention: a check", "attention", 1.0


@pytest.mark.fast
def test_a_message_is_translated_then_filled_at_display_time(chinese):
    r = _failure(core.WRONG_SHAPE, what="the output", got=(2, 3), expected=(2, 4))
    assert r.message == "the output has shape (2, 3), expected (2, 4)."  # English kept
    assert r.details == {"what": "the output", "got": "(2, 3)", "expected": "(2, 4)"}
    assert i18n.message(r) == "输出的形状是 (2, 3)，应为 (2, 4)。"  # "the output" too (phrases.py)
    (line,) = i18n.hint_lines(r, (2,))
    assert line.startswith("提示 2/3（操作或 API）：") and "B, H, L, S, d_k" in line
    values = _failure(
        core.WRONG_VALUES, what="the weights", err=0.25, index=(0, 1), got=1.0, want=0.75
    )
    assert i18n.message(values) == (
        "权重的数值与参考结果不同：最大误差 0.25，位于下标 (0, 1)（你的 1，应为 0.75）。"
    )


@pytest.mark.fast
def test_a_translation_whose_placeholders_do_not_fit_falls_back_to_english(monkeypatch):
    class Broken(gettext.NullTranslations):
        def gettext(self, message):
            return "坏的翻译 {nope}" if "{" in message else message

    monkeypatch.setattr(i18n, "translations", lambda lang: Broken())
    r = _failure(core.NOT_ATTEMPTED, exercise="causal_mask")
    assert (
        i18n.message(r)
        == r.message
        == ("causal_mask is not attempted yet: it still raises NotImplementedError.")
    )
    # and a Result without details (an old results file) keeps its English message
    r.details = {}
    assert i18n.message(r) == r.message


@pytest.mark.fast
def test_a_missing_or_unreadable_catalog_means_english_never_a_crash(tmp_path, monkeypatch):
    folder = tmp_path / "locale" / ZH / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "kit.po").write_text('msgid "Passed."\nmsgstr "通过。"\n\nthis is not a PO file\n')
    monkeypatch.setattr(i18n, "LOCALES", tmp_path / "locale")
    monkeypatch.setattr(i18n, "COMPILED", tmp_path / "compiled")
    i18n.translations.cache_clear()
    try:
        i18n.use(ZH)
        assert i18n._("Total: {score} / {total} points ({summary})").startswith("Total:")
    finally:
        i18n.use(None)
        i18n.translations.cache_clear()


@pytest.mark.fast
def test_catalogs_are_compiled_once_into_build_and_again_when_edited(tmp_path):
    po = tmp_path / "kit.po"
    po.write_text(
        'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "Passed."\nmsgstr "通过。"\n',
        encoding="utf-8",
    )
    data = i18n.compiled(po, ZH, tmp_path / "build")
    assert gettext.GNUTranslations(__import__("io").BytesIO(data)).gettext("Passed.") == "通过。"
    (first,) = (tmp_path / "build" / ZH / "LC_MESSAGES").glob("kit-*.mo")
    po.write_text(po.read_text(encoding="utf-8").replace("通过。", "已通过。"), encoding="utf-8")
    data = i18n.compiled(po, ZH, tmp_path / "build")
    (second,) = (tmp_path / "build" / ZH / "LC_MESSAGES").glob("kit-*.mo")
    assert second != first and b"\xe5\xb7\xb2" in data  # 已


@pytest.mark.fast
def test_the_table_in_chinese_wraps_by_terminal_columns(chinese):
    results = [
        _failure(core.NOT_ATTEMPTED, exercise="causal_mask"),
        _failure(core.CRASH, error="RuntimeError: " + "shape mismatch " * 8, where=""),
    ]
    results[0].status = core.Status.NOT_ATTEMPTED
    text = report.table(results, "T", hints=(1,))
    assert "待做" in text and "失败" in text and "总分：0 / 2 分" in text
    assert "1 项检查待修正" in text and "1 项检查未作答" in text
    assert "causal_mask 还未作答" in text
    assert max(report.width_of(line) for line in text.splitlines()) <= 92


def test_a_grade_in_chinese_shows_chinese_headings_and_filled_messages(pristine_stubs, tmp_path):
    proc, data = grade_cli(pristine_stubs, tmp_path, "--ex", "masks")
    assert "Total: 0 / " in proc.stdout  # the kit's tests run in English (conftest)
    from conftest import run_cli

    results = tmp_path / "zh.json"
    proc = run_cli(
        "--lang",
        "zh_CN.UTF-8",
        "grade",
        "--submission",
        str(pristine_stubs),
        "--results",
        str(results),
        "--ex",
        "masks",
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "总分：0 / " in out and "待做" in out and "项检查未作答" in out
    assert "causal_mask 还未作答：它仍然抛出 NotImplementedError。" in out
    assert "提示 1/3（思路）：" in out
    assert "causal_mask 还未作答" in results.read_text(encoding="utf-8")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in page and "还未作答" in page


@pytest.mark.fast
def test_every_check_title_shows_in_chinese():
    from autograder.core import i18n as i18n_titles
    from autograder.core.registry import all_checks

    try:
        i18n_titles.use("zh_CN")
        for check in all_checks():
            shown = i18n_titles.title(f"{check.module}.{check.slug}: {check.title}")
            assert shown != check.title, f"{check.module}.{check.slug}"
            assert any("\u4e00" <= c <= "\u9fff" for c in shown), shown
    finally:
        i18n_titles.use(None)


@pytest.mark.fast
def test_chinese_lines_never_start_with_closing_punctuation():
    """Line breaking in Chinese (kinsoku): at every width, no line starts with ，。：；）、 and
    none ends with （; the text is kept whole and no line is wider than asked."""
    text = (
        "你的掩码用反了：你屏蔽了标为 False（允许）的键，却让查询去关注标为 True（屏蔽）的键。"
        "形状对了，数值却不对：计算中有一步与文档字符串中的公式不一致。（同上：bias-scaled）。"
    ) * 2
    for width in range(36, 93):
        lines = report.wrap(text, width, " " * 14, " " * 16)
        assert "".join(line.strip() for line in lines).replace(" ", "") == text.replace(" ", "")
        for line in lines:
            assert report.width_of(line) <= width, (width, line)
            assert line.strip()[0] not in report.NO_LINE_START, (width, line)
            assert line.strip()[-1] not in report.NO_LINE_END, (width, line)
    # breaking between any two characters, as the table did, starts some line with one
    starts = set()
    for width in range(36, 93):
        line = " " * 16
        for c in text:
            if report.width_of(line + c) > width:
                starts.add(c)
                line = " " * 16
            line += c
    assert starts & report.NO_LINE_START
