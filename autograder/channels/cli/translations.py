"""`python -m autograder translations` (make translations): .pot templates from the code and
the registry, .po files merged (authoring/catalogs.py)."""

from __future__ import annotations

import argparse

from ...core import i18n
from ...core.paths import ROOT


def register(verbs) -> None:
    verbs.add_parser(
        "translations", help="extract the texts into .pot templates; update the .po catalogs"
    ).set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ...authoring import catalogs  # Babel: only for this verb

    templates = catalogs.templates()
    for path in catalogs.write_templates(templates):
        print(f"wrote {path.relative_to(ROOT)}")
    for lang in i18n.available():
        for path, texts, untranslated in catalogs.update(lang, templates):
            todo = f", {untranslated} to translate" if untranslated else ""
            print(f"updated {path.relative_to(ROOT)} ({texts} texts{todo})")
    return 0
