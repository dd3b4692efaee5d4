"""Attention Lab's grading engine.

Layout (one concern per file, named after it):
    core.py         Misconception, Check, Result: the data every runner shares
    tolerances.py   the one tolerance table per dtype
    verdicts.py     helpers verdicts use to compare and to name mistakes
    diagnosis.py    inference helpers (e.g. which scale the student used)
    dispatch.py     a TorchDispatchMode op counter (vectorisation, memory and cost checks)
    submission.py   loads a student package, swapping in trusted dependencies
    engine.py       runs one check: probe (student code) then verdict (trusted)
    fixtures.py     the public reference outputs and their manifest
    stubgen.py      generates assignments/ from solutions/
    plugin.py       the graded suites' pytest plugin (an item per check) and GradeTable,
                    make grade's report through pytest's hooks (table, results.json)
    report.py       renders the table and Gradescope's results.json
    report_html.py  build/report.html: the table, hints, and pictures of the student's outputs
    publish.py      merges each grading into build/results.json and report.html (every module)
    watch.py        `make watch`: a warm grader that re-grades a module when it is saved
    notebook.py     what nbgrader test cells call (the same checks)
    course.py       generates the nbgrader course and wraps nbgrader's verbs
    batch.py        `make batch`: many submissions, sandboxed, hidden tier
    sandbox/        the zygote, the jail, the child and the no-pickle wire of batch grading
    gradescope/     setup.sh, run_autograder and the autograder.zip builder
    cli.py          `python -m autograder <verb>`
    checks/<m>.py   the checks and misconceptions of exercise module <m>
    trusted/<m>.py  trusted stand-ins used to grade each module in isolation
"""
