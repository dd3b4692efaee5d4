"""`make translations`: gather every student-facing text into .pot templates and merge them
into the .po catalogs of each language (autograder/locale/<lang>/LC_MESSAGES/).

Two sources, one template per gettext domain:
- the texts the code marks with _(), ngettext() or N_() (i18n.py), found by Babel's Python
  extractor, as `pybabel extract -k N_ autograder` would: domain `kit`;
- the misconceptions: each `message` and each written hint level. Those of the exercise
  modules are data, autograder/checks/<module>/misconceptions.toml (misconception_data.py),
  read here in the order written, into domain `checks-<module>`, followed by the module's
  wrong-values ladders (checks/<module>/wrong_values.toml); the kit's own (core, worker,
  sandbox, verdicts) come from the registry, with the names of the hint levels, into `kit`.

Merging keeps every translation written, adds the new texts with an empty msgstr (shown in
English until someone translates them) and drops the texts no longer used. The catalogs are
compiled at run time (i18n.compiled), so there is no .mo to commit.
"""

from __future__ import annotations

import datetime as dt
import importlib
import io
import re
from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.pofile import read_po, write_po

from ..core import check as core
from ..core import misconception_data, registry
from ..core.i18n import ADVICE_SUFFIX, KIT_DOMAIN, LOCALES
from ..core.paths import BUILD, PACKAGE

TEMPLATES = BUILD / "locale" / "templates"
PROJECT = "Attention Lab"
KEYWORDS = {**DEFAULT_KEYWORDS, "N_": None}
PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z_0-9]*)[^{}]*\}")


def placeholders(text: str) -> set[str]:
    """The names of a text's {placeholders} (a {{ escape is not one)."""
    return set(PLACEHOLDER.findall(text.replace("{{", "").replace("}}", "")))


def _flags(text: str) -> tuple[str, ...]:
    return ("python-brace-format",) if placeholders(text) else ()


def ui_texts() -> Iterator[tuple[str | tuple[str, ...], str]]:
    """(msgid or (singular, plural), 'file:line') of every text marked in autograder/."""
    found = extract_from_dir(
        PACKAGE,
        method_map=[("locale/**", "ignore"), ("checks/**", "ignore"), ("**.py", "python")],
        keywords=KEYWORDS,
    )
    for filename, lineno, message, _comments, _context in found:
        if message and message != "":
            yield message, f"autograder/{filename}:{lineno}"


def domain_of(misconception_id: str) -> str:
    """checks-<module> for a misconception declared in autograder/checks/<module>/, else kit."""
    parts = core.origin(misconception_id).split(".")
    if len(parts) >= 3 and parts[:2] == ["autograder", "checks"]:
        return f"checks-{parts[2]}"
    return KIT_DOMAIN


def misconception_texts() -> dict[str, list[tuple[str, str]]]:
    """{domain: [(text, misconception id)]}: each message and each written hint level."""
    # the kit's own misconceptions (full names: tools/relayout.py rewrites them when files move)
    for module in (
        "autograder.run.worker",
        "autograder.core.verdicts",
        "autograder.run.sandbox.runner",
    ):
        importlib.import_module(module)
    found: dict[str, list[tuple[str, str]]] = {KIT_DOMAIN: [(n, "") for n in core.HINT_LEVELS]}
    for mid, m in core.declared().items():
        if domain_of(mid) == KIT_DOMAIN:
            found[KIT_DOMAIN].extend((text, mid) for text in (m.message, *m.hints) if text)
    for module in registry.modules():
        path = misconception_data.data_file(module)
        for mid, (message, hints) in misconception_data.read(path).items():
            texts = [(text, mid) for text in (message, *hints) if text]
            found.setdefault(f"checks-{module}", []).extend(texts)
        ladders = misconception_data.read_ladders(misconception_data.ladder_file(module))
        for exercise, hints in ladders.items():  # wrong-values, in each exercise's words
            texts = [(text, f"{core.WRONG_VALUES.id} ({exercise})") for text in hints]
            found.setdefault(f"checks-{module}", []).extend(texts)
    return found


def title_texts() -> dict[str, list[tuple[str, str]]]:
    """{checks-<module>: [(bare title, module.slug)]}: every check's title as declared, without
    the forgeable checks' suffix (a kit text of its own, i18n.ADVICE_SUFFIX)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for check in registry.all_checks():
        text = check.title.removesuffix(ADVICE_SUFFIX)
        found.setdefault(f"checks-{check.module}", []).append(
            (text, f"{check.module}.{check.slug}")
        )
    return found


def templates() -> dict[str, Catalog]:
    """One template Catalog per domain."""
    catalogs: dict[str, Catalog] = {}

    def catalog(domain: str) -> Catalog:
        if domain not in catalogs:
            catalogs[domain] = Catalog(domain=domain, project=PROJECT, fuzzy=False)
        return catalogs[domain]

    for message, where in ui_texts():
        path, line = where.rsplit(":", 1)
        text = message if isinstance(message, str) else message[0]
        flags = _flags(text if isinstance(message, str) else " ".join(message))
        added = catalog(KIT_DOMAIN).add(message, locations=[(path, int(line))], flags=flags)
        added.flags.discard("python-format")
    texts_of = misconception_texts()
    for domain, titles in title_texts().items():
        texts_of.setdefault(domain, []).extend(titles)
    for domain, texts in texts_of.items():
        for text, mid in texts:
            existing = catalog(domain).get(text)
            if existing is None:
                added = catalog(domain).add(
                    text, auto_comments=[mid] if mid else [], flags=_flags(text)
                )
                added.flags.discard("python-format")
            elif mid and mid not in existing.auto_comments:
                existing.auto_comments.append(mid)
    return catalogs


def write_templates(catalogs: dict[str, Catalog], folder: Path = TEMPLATES) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for domain, catalog in catalogs.items():
        path = folder / f"{domain}.pot"
        with path.open("wb") as f:
            write_po(f, catalog, width=0, omit_header=False)
        written.append(path)
    return written


def update(lang: str, catalogs: dict[str, Catalog]) -> list[tuple[Path, int, int]]:
    """Merge the templates into `lang`'s catalogs; [(path, texts, untranslated)]."""
    folder = LOCALES / lang / "LC_MESSAGES"
    folder.mkdir(parents=True, exist_ok=True)
    done = []
    for domain, template in sorted(catalogs.items()):
        path = folder / f"{domain}.po"
        if path.is_file():
            with path.open("rb") as f:
                po = read_po(f, locale=lang, domain=domain)
        else:
            po = Catalog(locale=lang, domain=domain, project=PROJECT, fuzzy=False)
        po.project, po.version = PROJECT, ""
        po.update(template, no_fuzzy_matching=True, update_header_comment=False)
        for message in po:  # the kit's texts are str.format templates, never %-formats
            message.flags.discard("python-format")
        if not isinstance(po.revision_date, dt.datetime):
            po.revision_date = po.creation_date
        buffer = io.BytesIO()
        write_po(
            buffer, po, width=0, ignore_obsolete=True, include_previous=False, no_location=True
        )
        # Babel writes "<project> <version>", and the kit has no version number.
        text = re.sub(
            rb'"Project-Id-Version: [^"]*"',
            f'"Project-Id-Version: {PROJECT}\\\\n"'.encode(),
            buffer.getvalue(),
            count=1,
        )
        path.write_bytes(text)
        untranslated = sum(1 for m in po if m.id and not m.string)
        done.append((path, len([m for m in po if m.id]), untranslated))
    return done
