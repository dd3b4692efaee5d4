"""Attention Lab's grading engine, one folder per layer. A layer imports only the layers
before it: core (trusted/ beside it), run (checks/ beside it), feedback, authoring,
channels; tests/kit/test_layout.py holds that direction and the few imports against
it.

    top level             the entry points whose import paths users rely on
        __main__.py           `python -m autograder`: the warm grader's client, else the command
                              line.
        notebook.py           The notebook runner: what the autograded test cells of the
                              nbgrader notebooks call.
        plugin.py             The graded suites' pytest plugin: one pytest item per check, and
                              make grade's table.

    core/                 What every layer shares: checks and misconceptions, verdict helpers,
                          reference outputs, tolerances, the syllabus, seeds, paths,
                          translations. Imports no other subpackage.
        check.py              The data every runner shares: misconceptions, checks (titles and
                              points: autograder/checks/<module>/checks.toml) and their results.
        course_config.py      The course configuration file, course/course.toml: one place for
                              what an instructor decides.
        diagnosis.py          Inference helpers: recover what a student's code actually computed
                              from its outputs.
        dispatch.py           Count what a piece of code asks PyTorch to do, op by op,
                              deterministically (never by timing).
        errors.py             Errors the CLI reports in one line (exit status 2): what was
                              expected, and what was given.
        fixtures.py           Public reference outputs: probe(solution) on the public seed,
                              stored per module.
        i18n.py               English and Simplified Chinese: the gettext catalogs behind every
                              student-facing text.
        misconception_data.py Each exercise module's misconceptions as data:
                              autograder/checks/<module>/misconceptions.toml.
        model_replays.py      What the judges' models gave on the public tier: how the student
                              copy names mistakes.
        paths.py              Where the kit's files are: one place, so no module computes the
                              root on its own.
        phrases.py            The English phrases the judges put into a message's details
                              ({what}, {got}, {detail}, ...).
        references.py         Expected outputs, per check: the one way every front end (make
                              grade, batch, Gradescope, nbgrader) gets them.
        registry.py           The checks of every exercise module (judge side: importing this
                              imports every verdict).
        seeds.py              Hidden seeds: one per student, derived from a secret only the
                              instructor holds.
        settings.py           The settings of one run, resolved in one place and passed down.
        syllabus.py           The course: its exercise modules, in the order students meet them.
        tolerances.py         The one tolerance table.
        verdicts.py           Helpers that verdicts use: type/shape/dtype guards, comparison,
                              naming the mistake.

    run/                  Running a check: the probe side, the forked worker, the confined
                          sandbox, the pre-fork servers. Imports core (and checks/, trusted/).
        channel.py            One message loop between the trusted parent and the process that
                              runs student code.
        engine.py             The one judge loop: whatever placement ran the probe, its outcome
                              becomes a Result here.
        forkserver.py         The pre-fork server: one process pays for torch's import and the
                              kit's warm-up once, then forks a child per request.
        limits.py             Time limits: CPU seconds, never wall-clock, so a loaded machine
                              costs no one a point.
        measure.py            Efficiency measured from outside the student's process: its peak
                              memory and CPU seconds.
        policy.py             The crash and timeout policy: one for every placement of a check
                              (engine.py).
        probing.py            The student side of a check: draw its inputs, import the module,
                              run the probe.
        submission.py         Load a student's package folder, one exercise module at a time, in
                              isolation.
        waiting.py            Checks that wait on another module: local grading with the
                              student's own dependencies.
        warm.py               The warm grader behind `make grade`: torch imported once, each
                              grading a fork of it.
        worker.py             The forked-worker placement of a check (make grade, make watch,
                              the kit's tests).

    run/sandbox/          Run untrusted student code in a confined process; judge its results
                          here.
        child.py              The sandboxed process: runs the probes of every check on one
                              submission.
        jail.py               Confine the process that runs student code.
        kernel.py             nbgrader's notebook kernel, confined by the sandbox's jail: the
                              launcher of `make autograde`.
        reference_fork.py     The hidden tier's reference outputs, computed in trusted forks of
                              the zygote.
        relay.py              The monitor's watch over the sandboxed process (trusted side).
        runner.py             Grade one submission in the sandbox: probes in a confined fork,
                              verdicts here.
        view.py               What of the kit a sandboxed process may see while it grades one
                              exercise module m.
        wire.py               The channel from the sandboxed process to the grader: plain data
                              only, never pickle.
        zygote.py             A zygote (the pre-fork server of forkserver.py, confined): torch
                              is imported once, every submission gets a fork of it.

    feedback/             What a student reads after grading: the table, results.json,
                          report.html, the hint ladder. Imports core and run.
        ladder.py             The hint ladder's state: which level of hint each failing check
                              shows a student.
        publish.py            build/results.json and build/report.html: every module graded so
                              far, each at its latest.
        report.py             Render results: the table `make grade` prints and Gradescope's
                              results.json.
        report_html.py        build/report.html: the table, each failing check's message and
                              hint, and pictures of what the student's own code computed, beside
                              the reference and a difference map.
        sinks.py              After grading: one result set, published to sinks.
        unicode_math.py       LaTeX math as Unicode text, so feedback pages read offline (no
                              MathJax from a CDN).

    channels/             Where grading is asked for: the command line, batch, Gradescope,
                          PrairieLearn, the nbgrader course, watch, the class report. May import
                          every layer.
        batch.py              `make batch SUBMISSIONS=dir`: grade a folder of untrusted
                              submissions, in parallel.
        class_report.py       `make class-report`: the class as a whole, from batch results or
                              the nbgrader course.
        lms.py                Learning platforms' download names and the course roster: who
                              handed in a downloaded file.
        prairielearn.py       PrairieLearn: `make prairielearn` writes a course folder; its
                              external grader runs the kit.
        similarity.py         Similar submissions, for the class report: exact and
                              near-duplicate files per module.
        watch.py              `make watch [EX=m]`: re-grade a module as soon as its file is
                              saved.

    channels/cli/         `python -m autograder <verb>`: one module per verb (register, run),
                          listed in the one registry, cli.VERBS.
        autograde.py          `python -m autograder autograde` (make autograde): nbgrader
                              autograde, then the hidden tier judged outside the kernel, in the
                              sandbox (channels/nbgrader/autograde.py).
        batch.py              `python -m autograder batch` (make batch): grade a folder of
                              submissions in the sandbox (channels/batch.py).
        checks.py             `python -m autograder checks`: one line per check, its id (the
                              keys course.toml's [points] takes), its points and its title.
        class_report.py       `python -m autograder class-report` (make class-report): the class
                              as a whole, from batch results or the nbgrader course
                              (channels/class_report.py).
        collect.py            `python -m autograder collect` (make collect):
                              downloaded/<assignment>/archive/ -> submitted/, with a report
                              (channels/nbgrader/collect.py).
        course.py             `python -m autograder course` (make course): the nbgrader course's
                              source notebooks, generated from solutions/
                              (channels/nbgrader/course.py).
        dist.py               `python -m autograder dist` (make dist): the student copy (no
                              solutions) as a .tar.gz, its files those on
                              authoring/student_copy.py's SHIPS.
        export.py             `python -m autograder export` (make export): course/grades.csv
                              from nbgrader's gradebook, "missing" told from 0
                              (channels/nbgrader/export.py).
        feedback.py           `python -m autograder feedback` (make feedback): nbgrader
                              generate_feedback (HTML, in feedback/;
                              channels/nbgrader/course.py).
        fixtures.py           `python -m autograder fixtures` (make fixtures): regenerate the
                              public reference outputs from solutions/ (the modules whose
                              solution or probe side changed).
        grade.py              `python -m autograder grade` (make grade, make grade-train): grade
                              a submission folder with the pytest suites and the reporting
                              plugin (plugin.py).
        gradescope.py         `python -m autograder gradescope` (make gradescope) builds
                              autograder.zip; `gradescope-run` grades one upload inside
                              Gradescope's container (channels/gradescope/).
        hint.py               `python -m autograder hint` (make hint EX=m): one level more of
                              the first failing check's hint ladder (feedback/ladder.py).
        nbgrader_course.py    What the nbgrader course's verbs share on the command line
                              (course.py, release.py, collect.py, autograde.py, regrade.py,
                              feedback.py, export.py): the --root option and one way to load the
                              course's machinery.
        new_module.py         `python -m autograder new-module --name x` (make new-module
                              NAME=x): scaffold every file of a new exercise module
                              (authoring/scaffold.py).
        options.py            Command-line options several verbs share: one definition, one
                              validation of EX.
        prairielearn.py       `python -m autograder prairielearn` (make prairielearn) writes a
                              PrairieLearn course folder; `prairielearn-run` grades one
                              submission inside its external grader (channels/prairielearn.py).
        regrade.py            `python -m autograder regrade` (make regrade STUDENT=...
        release.py            `python -m autograder release` (make release): nbgrader
                              generate_assignment, for each assignment
                              (channels/nbgrader/course.py).
        stubs.py              `python -m autograder stubs` (make stubs): regenerate assignments/
                              from solutions/.
        translations.py       `python -m autograder translations` (make translations): .pot
                              templates from the code and the registry, .po files merged
                              (authoring/catalogs.py).
        watch.py              `python -m autograder watch` (make watch): re-grade a module each
                              time it is saved (channels/watch.py).

    channels/nbgrader/    The nbgrader course: notebooks from solutions/, nbgrader's verbs,
                          collecting, autograding outside the kernel, exporting grades.
        autograde.py          Judge nbgrader submissions outside the student's kernel (`make
                              autograde`).
        collect.py            `make collect`: downloads ->
                              course/submitted/<student>/<assignment>/, never stopping a class.
        course.py             The nbgrader course: source notebooks generated from solutions/,
                              and the instructor's verbs.
        export.py             `make export`: course/grades.csv from nbgrader's gradebook,
                              "missing" told from 0, and course/canvas.csv, Canvas's gradebook
                              import with the ids the roster holds.
        kernel.py             `make autograde` runs nbgrader's notebook kernels confined, by the
                              sandbox's jail.
        preprocess.py         What nbgrader's own processes load from the course's
                              nbgrader_config.py (its sanitising steps), without torch.
        records.py            What each nbgrader grade was computed under:
                              course/records/<student>/<assignment>.json.

    channels/gradescope/  Gradescope: `make gradescope` builds autograder.zip; run_autograder
                          grades one upload.

    authoring/            The instructor's tools that write the kit's files: stubs, new modules,
                          the student copy, translation catalogs. Imports core, run and
                          feedback.
        catalogs.py           `make translations`: gather every student-facing text into .pot
                              templates and merge them into the .po catalogs of each language
                              (autograder/locale/<lang>/LC_MESSAGES/).
        scaffold.py           `make new-module NAME=x`: every file an exercise module needs,
                              ready to fill in.
        stubgen.py            Generate the student stubs (assignments/) from the single source
                              (solutions/).
        student_copy.py       What `make dist` changes in the files it copies into the student
                              copy.

    checks/               checks/<m>/: probe*.py (student side) and judge*.py (verdicts) of
                          module <m>
    trusted/              trusted/<m>.py: trusted stand-ins, to grade each module in isolation
    fixtures/             fixtures/<m>.json, .npz: the public tier's reference outputs (make
                          fixtures)
    locale/               locale/<lang>/LC_MESSAGES/: the gettext catalogs (kit.po,
                          checks-<m>.po)
"""
