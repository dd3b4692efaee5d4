"""English and Simplified Chinese: the gettext catalogs behind every student-facing text.

The catalogs are PO files in autograder/locale/<lang>/LC_MESSAGES/: `kit.po` (the tables,
summaries, report, notebook feedback and the misconceptions of core, worker, sandbox and
verdicts) and one `checks-<module>.po` per exercise module (its misconceptions). The msgid of
each entry is the English text itself, so English needs no catalog, and a text without a
translation shows in English.

The language comes from `use()` (make grade LANG=...: cli passes --lang) or else from the
environment, as gettext reads it: LANGUAGE, LC_ALL, LC_MESSAGES, LANG (the first one set).

Compiled catalogs: each PO file is compiled with Babel (in the student set, requirements.lock)
on first use into build/locale/<lang>/LC_MESSAGES/<domain>-<hash of the PO>.mo and read with
the standard library's gettext. The hash in the name means an edited PO file (a `git pull`, a
new module) is compiled again, with no stamp to keep; a fresh clone, the student copy, the
Gradescope image and a batch run all compile on their first grading in Chinese, with no step
of their own. Where build/ cannot be written, the catalog is compiled in memory. Only the
trusted side translates (at display time), so the sandboxed child needs none of this.

Texts are translated when shown: the English template is looked up, then its {placeholders}
are filled from the Result's details; a translation whose placeholders do not fit falls back
to the English template, and nothing here ever raises for a missing or broken catalog.
"""

from __future__ import annotations

import dataclasses
import gettext
import hashlib
import io
import os
import re
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from .check import HINT_LEVELS, WRONG_VALUES, Misconception, Result, declared, own_ladder
from .paths import BUILD, PACKAGE
from .phrases import PHRASES

LOCALES = PACKAGE / "locale"
COMPILED = BUILD / "locale"
ENGLISH = "en"
KIT_DOMAIN = "kit"
# What a language variable may name for each catalog (lower case, without encoding).
ALIASES = {"zh_CN": ("zh", "zh_cn", "zh_hans", "zh_hans_cn", "zh_sg", "chinese")}
ENVIRONMENT = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")

_chosen: str | None = None


def N_(text: str) -> str:
    """Mark a text for extraction (pybabel) without translating it here."""
    return text


def available() -> list[str]:
    """The languages with a catalog folder, besides English."""
    if not LOCALES.is_dir():
        return []
    return sorted(p.name for p in LOCALES.iterdir() if (p / "LC_MESSAGES").is_dir())


def normalise(value: str) -> str:
    """'zh_CN.UTF-8' -> 'zh_CN'; anything without a catalog (en_US, C, POSIX) -> 'en'."""
    code = value.split(".")[0].split("@")[0].strip().replace("-", "_").lower()
    for lang in available():
        if code == lang.lower() or code in ALIASES.get(lang, ()):
            return lang
    return ENGLISH


def from_environment(env: Mapping[str, str] | None = None) -> str:
    """The language gettext would choose: the first of LANGUAGE (a ':' list), LC_ALL,
    LC_MESSAGES, LANG that is set; English when none names a catalog."""
    env = os.environ if env is None else env
    for variable in ENVIRONMENT:
        value = env.get(variable, "")
        if not value:
            continue
        if variable == "LANGUAGE":
            found = [normalise(v) for v in value.split(":") if v]
            chosen = next((lang for lang in found if lang != ENGLISH), ENGLISH)
            if chosen != ENGLISH or any(v.lower().startswith("en") for v in value.split(":")):
                return chosen
            continue  # LANGUAGE=C or an unknown language: the next variable decides
        return normalise(value)
    return ENGLISH


def use(lang: str | None) -> str:
    """Show texts in `lang` ('zh_CN.UTF-8', 'zh_CN', 'en', ...) from now on; None or ''
    goes back to the environment's choice. Returns the language chosen."""
    global _chosen
    _chosen = normalise(lang) if lang else None
    return current()


def current() -> str:
    return _chosen or from_environment()


# --------------------------------------------------------------------------- catalogs


def _compile(po: Path, lang: str) -> bytes:
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        catalog = read_po(f, locale=lang, domain=po.stem)
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def compiled(po: Path, lang: str, folder: Path | None = None) -> bytes:
    """The .mo bytes of `po`: from build/locale when compiled before, else compiled now
    (with Babel) and kept there, replacing the older compilations of the same domain."""
    folder = (folder or COMPILED) / lang / "LC_MESSAGES"
    source = po.read_bytes()
    mo = folder / f"{po.stem}-{hashlib.sha256(source).hexdigest()[:16]}.mo"
    try:
        return mo.read_bytes()
    except OSError:
        pass
    data = _compile(po, lang)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = mo.with_name(f".{mo.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(mo)
        for old in folder.glob(f"{po.stem}-*.mo"):
            if old != mo and old.name.rsplit("-", 1)[0] == po.stem:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only copy of the kit: the catalog lives in memory only
    return data


_warned: set[str] = set()


def _warn(text: str) -> None:
    if text not in _warned:
        _warned.add(text)
        print(f"note: {text}; showing English", file=sys.stderr)


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """Every catalog of `lang` as one chain: kit.po first, then each checks-*.po."""
    chain = gettext.NullTranslations()
    if lang == ENGLISH:
        return chain
    folder = LOCALES / lang / "LC_MESSAGES"
    files = sorted(folder.glob("*.po"), key=lambda p: (p.stem != KIT_DOMAIN, p.name))
    for po in files:
        try:
            data = compiled(po, lang)
            chain.add_fallback(gettext.GNUTranslations(io.BytesIO(data)))
        except ImportError:
            _warn(f"the {lang} texts need Babel (make venv installs it)")
            break
        except Exception as e:  # a broken catalog costs its own texts only
            _warn(f"{po.relative_to(PACKAGE.parent)} could not be read ({type(e).__name__}: {e})")
    return chain


def _(text: str) -> str:
    """`text` in the current language (the English text when no translation is written)."""
    if not text:
        return text
    return translations(current()).gettext(text)


def ngettext(one: str, many: str, n: int) -> str:
    return translations(current()).ngettext(one, many, n)


# --------------------------------------------------------------------------- misconceptions


# The details that carry the reference's own values: the expected number, the error from it
# (which gives the number back, up to a sign). On hidden inputs they are withheld (issue 27):
# feedback names the mistake and shows the student's own values, never the reference's, so a
# resubmission cannot collect the answers.
REFERENCE_DETAILS = frozenset({"want", "err"})
WITHHELD = N_("(hidden)")


class _Withheld(str):
    """A withheld value: printed as it is, whatever format spec its placeholder has."""

    def __format__(self, spec: str) -> str:
        return str(self)


def withhold_reference(result: Result) -> Result:
    """`result` with every reference value (REFERENCE_DETAILS) withheld from its details and
    its English message and hint worded again without them; unchanged when it has none."""
    if not REFERENCE_DETAILS & result.details.keys():
        return result
    details = {k: WITHHELD if k in REFERENCE_DETAILS else v for k, v in result.details.items()}
    m = misconception_of(result)
    shown = _shown(details, lambda text: text)
    message = _format(m.message, shown) if m is not None else None
    hint = _format(m.hint, shown) if m is not None else None
    return dataclasses.replace(
        result,
        details=details,
        message=message if message is not None else WITHHELD,
        hint=hint if hint is not None else "",
    )


def _shown(details: Mapping[str, Any], word: Any) -> dict[str, Any]:
    """The values to fill a template with: a withheld one as _Withheld (its word in the
    language, `word(WITHHELD)`)."""
    return {
        k: _Withheld(word(WITHHELD)) if k in REFERENCE_DETAILS and v == WITHHELD else v
        for k, v in details.items()
    }


def _format(template: str, values: Mapping[str, Any]) -> str | None:
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        return None


def fill(template: str, details: Mapping[str, Any], lang: str | None = None) -> str | None:
    """`template` translated, its placeholders filled from `details`; the English template
    when the translation's placeholders do not fit; None when neither fits."""
    if not template:
        return ""
    catalog = translations(lang or current())
    # the English phrases among the values ("the attention weights", "causal_mask(5)'s
    # mask") are worded again too (phrases.py); any other phrase a catalog holds as well, but
    # no other single word (a value "error" is not the status word)
    values = {k: phrase(v, catalog) if isinstance(v, str) else v for k, v in details.items()}
    values = _shown(values, catalog.gettext)
    details = _shown(details, lambda text: text)
    for text, given in ((catalog.gettext(template), values), (template, details)):
        try:
            return _close_up(text.format(**given))
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            continue
    return None


_CJK_SPACE = re.compile(
    r"(?<=[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]) +(?=[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef])"
)


def _close_up(text: str) -> str:
    """No space between two Chinese characters (a template's "{what} 的" filled with a
    Chinese phrase)."""
    return _CJK_SPACE.sub("", text)


_SHAPE = r"\([0-9, ]*\)"  # a {shape} placeholder: a tuple of sizes, (2, 3, 9)


# The longest detail value read against the phrases' patterns. A pattern of k placeholders
# matched in full backtracks in up to about len(value)^k steps on a value built to fail late:
# a 4,000-character value (what a child may send) against a four-placeholder phrase took 9.6 s
# of the grader's time, holding the GIL, for each detail and each sink. The judges' own
# phrases are a few hundred characters at most; a longer value is shown as it is.
PHRASE_MAX = 600


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """phrases.PHRASES with placeholders as (template, pattern), the most specific first
    (the most literal text)."""
    found = []
    for template in PHRASES:
        parts = re.split(r"\{(\w+)\}", template)
        if len(parts) == 1:
            continue
        regex = "".join(
            re.escape(part) if i % 2 == 0 else f"(?P<{part}>{_SHAPE if part == 'shape' else '.+?'})"
            for i, part in enumerate(parts)
        )
        literal = sum(len(part) for part in parts[::2])
        found.append((literal, template, re.compile(regex, re.DOTALL)))
    found.sort(key=lambda item: -item[0])
    return tuple((template, pattern) for _, template, pattern in found)


@cache
def _fixed() -> frozenset[str]:
    return frozenset(p for p in PHRASES if "{" not in p)


def phrase(value: str, catalog: gettext.NullTranslations, depth: int = 0) -> str:
    """A detail value in the catalog's language: a phrase of phrases.PHRASES (or any phrase of
    several words a catalog holds) translated; one that matches a phrase's pattern worded
    with its translation, the parts it captured worded in turn; anything else as it is."""
    if value in _fixed() or " " in value:
        shown = catalog.gettext(value)
        if shown != value or value in _fixed():
            return shown
    if depth > 4 or " " not in value or len(value) > PHRASE_MAX:
        return value
    for template, pattern in _patterns():
        found = pattern.fullmatch(value)
        if found is None:
            continue
        translated = catalog.gettext(template)
        if translated == template:
            return value
        parts = {k: phrase(v, catalog, depth + 1) for k, v in found.groupdict().items()}
        try:
            return _close_up(translated.format(**parts))
        except (KeyError, IndexError, ValueError):
            return value
    return value


def misconception_of(result: Result) -> Misconception | None:
    """The misconception `result` names, with its exercise's own hint ladder where the
    exercise has one (misconception_data.own_ladder: wrong-values)."""
    if not result.misconception:
        return None
    found = declared().get(result.misconception)
    if found is None:
        from .registry import all_misconceptions

        try:
            found = all_misconceptions().get(result.misconception)
        except Exception:
            return None
    if found is None or found.id != WRONG_VALUES.id:
        return found
    return own_ladder(found, result.module, _exercise_of(result.check_id))


def _exercise_of(check_id: str) -> str:
    """The exercise a check grades ('' for a check no module declares)."""
    from .registry import find

    try:
        return find(check_id).exercise
    except Exception:
        return ""


def message(result: Result, lang: str | None = None) -> str:
    """The failure's message in the current language (its English text when it cannot be
    worded again: no such misconception here, or details missing)."""
    m = misconception_of(result)
    if m is None or not result.message:
        return _(result.message) if lang is None else result.message
    text = fill(m.message, result.details, lang)
    return result.message if text is None else text


def hint_lines(result: Result, levels: Sequence[int] | None = None) -> list[str]:
    """The hint ladder's lines for a failing result, labelled and translated.

    levels=None: the most detailed level, as "Hint: ..." (no ladder state applies).
    levels=(1,), (1, 2), (1, 2, 3), ...: each level, or the nearest level written when that
    one is empty (a misconception with one hint string has level 3 only), once each."""
    m = misconception_of(result)
    if levels is None or m is None:
        if m is not None:
            text = fill(m.hint, result.details)
            hint = result.hint if text is None else text
        else:
            hint = _(result.hint)
        return [_("Hint: {text}").format(text=hint)] if hint else []
    lines, seen = [], set()
    for wanted in levels:
        level, template = m.level(wanted)
        if not level or level in seen:
            continue
        seen.add(level)
        text = fill(template, result.details)
        if text is None:
            continue
        lines.append(
            _("Hint {level}/{levels} ({name}): {text}").format(
                level=level, levels=len(HINT_LEVELS), name=_(HINT_LEVELS[level - 1]), text=text
            )
        )
    return lines


def status_word(status: str) -> str:
    """A check's status (passed, failed, not attempted, timed out, error, waiting; note:
    advice, a 0-point check that did not pass) in words."""
    words = {
        "passed": N_("passed"),
        "failed": N_("failed"),
        "not attempted": N_("not attempted"),
        "timed out": N_("timed out"),
        "error": N_("error"),
        "waiting": N_("waiting"),
        "note": N_("note"),
    }
    return _(words.get(str(status), str(status)))


def html_lang() -> str:
    """The page's lang attribute: 'en' or 'zh-CN'."""
    return current().replace("_", "-")


ADVICE_SUFFIX = " (advice, 0 points: measured inside your own process)"


def title(name: str) -> str:
    """A check's title (a Result's name "module.slug: title", or the bare title) in the
    current language: the bare title is looked up in the catalogs, and the forgeable checks'
    suffix is a text of its own, so the catalogs hold the titles as declared."""
    bare = name.split(": ", 1)[-1]
    advice = bare.endswith(ADVICE_SUFFIX)
    if advice:
        bare = bare[: -len(ADVICE_SUFFIX)]
    shown = _(bare)
    if advice:
        shown += _(N_(" (advice, 0 points: measured inside your own process)"))
    return shown


def name(full: str) -> str:
    """A Result's name "module.slug: title" with its title in the current language."""
    head, sep, _rest = full.partition(": ")
    return f"{head}{sep}{title(full)}" if sep else title(full)
