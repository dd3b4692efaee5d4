"""nbgrader's own processes read this from the course's nbgrader_config.py: the steps that
sanitise a notebook before nbgrader autogrades it. It imports nbgrader only, never torch or the
grader: every `nbgrader` command the course verbs run loads the config, and none of them
grades anything itself (make autograde judges outside them, in the sandbox).
"""

from __future__ import annotations

from nbgrader.api import Gradebook
from nbgrader.converters.autograde import Autograde
from nbgrader.preprocessors import DeduplicateIds, NbGraderPreprocessor


class DropEmptyNbgraderMetadata(NbGraderPreprocessor):
    """After DeduplicateIds: a cell whose nbgrader metadata is empty, has no grade_id, or one
    the release does not have becomes an ordinary cell (sanitize_preprocessors)."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            source = gb.find_notebook(info["notebook"], info["assignment"])
            self.known = {c.name for c in source.source_cells}
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if "nbgrader" not in cell.metadata:
            return cell, resources
        meta = cell.metadata["nbgrader"]
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if grade_id not in self.known:
            if grade_id:
                self.log.warning("Cell %r is no cell of the release: an ordinary cell", grade_id)
            del cell.metadata["nbgrader"]
        return cell, resources


def sanitize_preprocessors() -> list:
    """nbgrader's autograde sanitising steps, plus one after DeduplicateIds.

    DeduplicateIds leaves `"nbgrader": {}` on a duplicated cell; OverwriteCells with
    add_missing_cells then fails on it with KeyError 'grade_id' (nbgrader 0.9.6, see
    jupyter/nbgrader#1083). OverwriteCells also takes the grade_id off a cell whose grade_id
    the gradebook does not know (a student retagged a cell) and keeps the rest of its nbgrader
    metadata, and add_missing_cells fails the same way: the whole notebook went ungraded. The
    extra step makes such cells ordinary cells (nbgrader metadata that is empty, has no
    grade_id, or one the release does not have); the official grade reads the cells by the
    release's own ids (autograde.py).
    """
    steps = list(Autograde.class_traits()["sanitize_preprocessors"].make_dynamic_default())
    steps.insert(steps.index(DeduplicateIds) + 1, DropEmptyNbgraderMetadata)
    return steps
