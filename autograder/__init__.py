"""Attention Lab's grading engine.

Layout (one concern per file, named after it):
    core.py         Misconception, Check, Result: the data every runner shares
    tolerances.py   the one tolerance table per dtype
    verdicts.py     helpers verdicts use to compare and to name mistakes
    diagnosis.py    inference helpers (e.g. which scale the student used)
    submission.py   loads a student package, swapping in trusted dependencies
    engine.py       runs one check: probe (student code) then verdict (trusted)
    fixtures.py     the public reference outputs and their manifest
    stubgen.py      generates assignments/ from solutions/
    plugin.py       the pytest plugin behind `make grade` (points, table, results.json)
    report.py       renders the table and Gradescope's results.json
    cli.py          `python -m autograder grade|stubs|fixtures|dist`
    checks/<m>.py   the checks and misconceptions of exercise module <m>
    trusted/<m>.py  trusted stand-ins (built from PyTorch built-ins) used for isolation
"""
