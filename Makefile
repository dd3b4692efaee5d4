# Attention Lab: every user verb is a target. `make help` lists them.
# Each target that runs Python bootstraps .venv (pinned dependencies) when it is missing.

PYTHON3 ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.attention-lab-installed
SUBMISSION ?= assignments
EX ?=
VERBOSE ?=
DEVICE ?= cpu
RESULTS ?= build/results.json
HINTS ?=
# WARM=1: after a first `make grade`, a warm grader (autograder/run/warm.py: torch imported once)
# waits in the background and runs the next ones; WARM=0 grades in a fresh process each time.
WARM ?= 1
# make grade LANG=zh_CN.UTF-8: a LANG given to make wins over LC_ALL / LANGUAGE set in the shell
# (gettext's own order: LANGUAGE, LC_ALL, LC_MESSAGES, LANG, when LANG comes from the shell).
LANG_ARG = $(if $(filter command line,$(origin LANG)),$(if $(LANG),--lang $(LANG)))
export PYTHONPATH := $(CURDIR)
export PYTHONDONTWRITEBYTECODE := 1

.DEFAULT_GOAL := help
.PHONY: help grade test lint format stubs fixtures dist clean venv course release collect autograde feedback export

# The instructors' verbs: they need the full kit (solutions/, the kit's tests, the instructor
# extras). The student copy (`make dist`) has no solutions/: there `make help` leaves these out,
# and each of them stops at once, before installing anything, saying why. A new verb with a
# `## ` help text is a student's verb unless it is listed here (tests/kit/test_dist.py).
INSTRUCTOR_VERBS := test test-fast lint format stubs fixtures new-module dist translations \
  venv-instructor bench bench-flash bench-kv bench-grade bench-batch batch gradescope prairielearn \
  class-report sandbox-deps ci-deps course release collect autograde regrade feedback export
STUDENT_COPY := $(if $(wildcard $(CURDIR)/solutions/__init__.py),,yes)
ifeq ($(STUDENT_COPY),yes)
ifneq ($(filter $(INSTRUCTOR_VERBS),$(MAKECMDGOALS)),)
$(error make $(firstword $(filter $(INSTRUCTOR_VERBS),$(MAKECMDGOALS))) is an instructor's verb: it needs the full instructor kit (solutions/ and the instructor extras), and this is the student copy. `make help` lists your verbs)
endif
endif

help: ## list the verbs
	@echo "Attention Lab — make targets$(if $(STUDENT_COPY), (the student copy))"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' \
	  $(if $(STUDENT_COPY),| awk -F'\t' -v hide=" $(INSTRUCTOR_VERBS) " 'index(hide, " " $$1 " ") == 0') \
	  | awk -F'\t' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "Variables: SUBMISSION=dir (default assignments), EX=module, DEVICE=cpu|cuda, VENV=path"

# pip compiles what it installs one file at a time; installing with --no-compile and then
# compiling site-packages once on every core leaves the same bytecode a little sooner (both
# passes of a new venv on 2 cores, paired runs: 55 and 63 s before, 52 and 53 s after; the
# student set's pip alone: 21 s, against 9 s plus 7.5 s). One file of torch's tests is 3.12 syntax,
# so compileall never exits 0: the check is that torch's own bytecode is there, else it
# compiles again on one core.
SITE = $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
define compile_site
	@sp=$(SITE); \
	$(PY) -m compileall -q -j 0 "$$sp" >/dev/null 2>&1; \
	ls "$$sp"/torch/__pycache__/__init__.*.pyc >/dev/null 2>&1 \
	  || $(PY) -m compileall -q "$$sp" >/dev/null 2>&1; true
endef

# When the instructor extras come next (SITE_LATER, set for $(ISTAMP) and so for this
# prerequisite of it), the student set is compiled there, beside the extras' pip (which keeps
# one core busy): the student set's own stamp is written only once it is compiled.
$(STAMP): requirements.lock
	@test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile -r requirements.lock
	$(if $(SITE_LATER),@rm -f $(STAMP),$(compile_site))
	@$(if $(SITE_LATER),true,touch $(STAMP))

# The kit's own bytecode (autograder/, solutions/), compiled here once and checked against each
# source file's hash when it is imported, so an edited file is compiled afresh, never run stale.
# Every interpreter the kit starts imports it (about 0.15 CPU-s each when it has to compile).
# Nothing else is cached: PYTHONDONTWRITEBYTECODE leaves students' files and the tests' copies
# uncompiled. A tree it cannot write to grades as before, compiling in memory.
KIT_SOURCES := $(shell find autograder solutions -name '*.py' 2>/dev/null)
BYTECODE := build/.kit-bytecode
$(BYTECODE): $(KIT_SOURCES) | $(STAMP)
	@mkdir -p build && $(PY) -m compileall -q --invalidation-mode checked-hash autograder \
	  $(wildcard solutions) >/dev/null 2>&1; touch $@ 2>/dev/null || true

# Instructor extras (nbgrader, Jupyter, the kit's test tools): installed on first use of a verb
# that needs them, on top of the student set.
ISTAMP := $(VENV)/.attention-lab-instructor-installed
$(ISTAMP): SITE_LATER := yes
$(ISTAMP): $(STAMP) requirements-instructor.lock
	@sp=$(SITE); later=; \
	if [ ! -e $(STAMP) ]; then \
	  ls -A "$$sp" | grep -v '^__pycache__$$' | sed "s|^|$$sp/|" \
	    | xargs -d '\n' $(PY) -m compileall -q -j 0 >/dev/null 2>&1 & later=$$!; \
	fi; \
	$(PY) -m pip install --quiet --no-compile -r requirements.lock -r requirements-instructor.lock; \
	installed=$$?; [ -z "$$later" ] || wait $$later; exit $$installed
	$(compile_site)
	@touch $(STAMP) && touch $(ISTAMP)

venv: $(STAMP) ## create .venv with the student set (torch CPU, numpy, pytest, matplotlib)

.PHONY: venv-instructor
venv-instructor: $(ISTAMP) ## add the instructor extras (nbgrader, Jupyter, test tools) to .venv

grade: $(STAMP) $(BYTECODE) ## grade SUBMISSION (default assignments/), EX=module for one exercise, VERBOSE=1 shows your prints, HINTS=all, LANG=zh_CN.UTF-8, WARM=0
	$(PY) -m autograder $(LANG_ARG) $(if $(WARM),--warm $(WARM)) grade --submission $(SUBMISSION) $(if $(EX),--ex $(EX)) --device $(DEVICE) --results $(RESULTS) $(if $(filter-out 0,$(VERBOSE)),--verbose) $(if $(HINTS),--hints $(HINTS))

.PHONY: hint
hint: $(STAMP) $(BYTECODE) ## the next hint level for the first failing check of EX=module (hint ladder: idea, API, nearly code)
	@test -n "$(EX)" || { echo "usage: make hint EX=module" >&2; exit 2; }
	@$(PY) -m autograder $(LANG_ARG) $(if $(WARM),--warm $(WARM)) hint --submission $(SUBMISSION) --ex $(EX)

.PHONY: translations
translations: $(STAMP) $(BYTECODE) ## extract the texts (pybabel + every misconception) into .pot, update the .po catalogs
	$(PY) -m autograder translations

.PHONY: watch
watch: $(STAMP) $(BYTECODE) ## re-grade a module each time you save it (EX=module to watch only some); Ctrl-C stops
	$(PY) -m autograder $(LANG_ARG) watch --submission $(SUBMISSION) $(if $(EX),--ex $(EX)) --results $(RESULTS)

.PHONY: grade-train
grade-train: $(STAMP) $(BYTECODE) ## grade gpt.py, llama.py and induction.py with their slow training runs (a few CPU-s each), merged into build/results.json
	$(PY) -m autograder $(LANG_ARG) grade --submission $(SUBMISSION) --ex gpt,llama,induction --include-slow --device $(DEVICE) --results $(RESULTS)

# make lint runs beside pytest (its mypy takes a minute cold); its output goes to
# build/lint.log, shown when it fails; make test fails when either fails. mypy's and ruff's
# caches are in build/ (pyproject.toml), out of the copies of the tree some tests make.
test: $(ISTAMP) $(BYTECODE) sandbox-deps ## the kit's own tests, all of them, and lint beside them (what CI runs; a few minutes)
	@mkdir -p build; rm -f build/lint.log; \
	$(MAKE) --no-print-directory lint VENV=$(VENV) >build/lint.log 2>&1 & lint=$$!; \
	$(PY) -m pytest -q -rs -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder; tests=$$?; \
	wait $$lint; linted=$$?; \
	if [ $$linted -ne 0 ]; then echo "make lint failed:" >&2; cat build/lint.log >&2; \
	else echo "make lint: passed (build/lint.log)"; fi; \
	[ $$tests -eq 0 ] && [ $$linted -eq 0 ]

# pytest-xdist workers for make test: one per core, a unit of work per worker at a time: a
# test file (its module fixtures, such as a whole nbgrader course cycle, are built once), or
# one test of a file whose tests are units of their own, the longest first (tests/kit/
# conftest.py: EACH_TEST_A_UNIT, LONGEST_FIRST); TEST_JOBS=0 runs them all in this process.
TEST_JOBS ?= auto

.PHONY: test-fast
test-fast: $(ISTAMP) $(BYTECODE) ## unit tests of verdicts, report, plugin, wire, stubgen, limits (under a minute)
	$(PY) -m pytest -q -m fast -n $(FAST_JOBS)

# pytest-xdist workers for make test-fast: none by default (one process took 35 s of CPU, two
# workers 66 s: each collects every test file again; about the same time on 2 cores)
FAST_JOBS ?= 0

lint: $(ISTAMP) ## ruff lint and format check, mypy (the whole package; strict on the core and the runner)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(ISTAMP) ## ruff format the tree
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

stubs: $(STAMP) $(BYTECODE) ## regenerate assignments/ from solutions/ (instructors)
	$(PY) -m autograder stubs

fixtures: $(STAMP) $(BYTECODE) ## regenerate the public reference outputs from solutions/ (instructors)
	$(PY) -m autograder fixtures

.PHONY: new-module
new-module: $(STAMP) $(BYTECODE) ## scaffold every file of a new exercise module: make new-module NAME=x
	@test -n "$(NAME)" || { echo "usage: make new-module NAME=x (a lower-case module name)" >&2; exit 2; }
	$(PY) -m autograder new-module --name $(NAME)

dist: $(STAMP) $(BYTECODE) ## build build/attention-lab-student.tar.gz, the student copy (no solutions)
	$(PY) -m autograder dist --out build/attention-lab-student.tar.gz

.PHONY: bench
bench: $(STAMP) $(BYTECODE) ## peak memory and time of quadratic, chunked, linear attention, T = 1k..16k (DEVICE=cpu|cuda)
	$(PY) bench/attention_memory.py --device $(DEVICE) --json build/bench-$(DEVICE).json

T ?= 1024,2048,4096,8192,16384
.PHONY: bench-flash
bench-flash: $(STAMP) $(BYTECODE) ## forward + backward: FlashAttention vs quadratic autograd vs fused SDPA, time and peak memory (T=1024,... THREADS=n)
	$(PY) bench/flash.py --device $(DEVICE) --lengths $(T) $(if $(THREADS),--threads $(THREADS)) --json build/bench-flash-$(DEVICE).json

.PHONY: bench-kv
bench-kv: $(STAMP) $(BYTECODE) ## generate T = 512 tokens with and without the KV cache: tokens per second, ratio
	$(PY) bench/kvcache.py

RUNS ?= 3
.PHONY: bench-grade
bench-grade: $(STAMP) $(BYTECODE) ## time make grade, whole kit and each module side by side (warm; RUNS=3)
	$(PY) bench/grade_speed.py --runs $(RUNS)

# Batch grading (instructors): SUBMISSIONS=dir of package folders / .zips, BATCH_OUT=dir
SUBMISSIONS ?=
BATCH_OUT ?= build/batch
JOBS ?=
BENCH_N ?= 200
.PHONY: batch gradescope bench-batch

SEED ?=
batch: $(STAMP) $(BYTECODE) sandbox-deps ## grade SUBMISSIONS=dir (one folder or .zip per student), sandboxed; STUDENT=id regrades one, SEED=n
	@test -n "$(SUBMISSIONS)" || { echo "usage: make batch SUBMISSIONS=dir [BATCH_OUT=build/batch] [JOBS=n] [STUDENT=id] [SEED=n]" >&2; exit 2; }
	$(PY) -m autograder $(LANG_ARG) batch --submissions $(SUBMISSIONS) --out $(BATCH_OUT) $(if $(EX),--ex $(EX)) $(if $(JOBS),--jobs $(JOBS)) $(if $(SEED),--seed $(SEED)) $(if $(STUDENT),--student $(STUDENT))

gradescope: $(STAMP) $(BYTECODE) ## build build/autograder.zip for Gradescope (setup.sh, run_autograder)
	$(PY) -m autograder $(LANG_ARG) gradescope --out build/autograder.zip $(if $(EX),--ex $(EX))

.PHONY: sandbox-deps
sandbox-deps: ## libseccomp2 (apt, as root) for the sandbox's seccomp filter, if missing
	@ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	       && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libseccomp2 >/dev/null; } \
	  || echo "note: libseccomp2 is missing: make batch refuses to grade without --insecure" >&2

bench-batch: $(ISTAMP) $(BYTECODE) sandbox-deps ## time make batch against nbgrader autograde on BENCH_N=200 submissions (EX=modules)
	$(PY) bench/batch_vs_nbgrader.py --n $(BENCH_N) $(if $(EX),--modules $(EX))

# nbgrader course (instructors): COURSE=dir (default course), ASSIGNMENT=name (default all)
COURSE ?= course
ASSIGNMENT ?=
COURSE_ARGS = --root $(COURSE) $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT))

course: $(ISTAMP) $(BYTECODE) ## generate the nbgrader course (COURSE=course) from solutions/
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	$(PY) -m autograder course --root $(COURSE)

release: $(ISTAMP) $(BYTECODE) ## nbgrader generate_assignment: COURSE/release/ (ASSIGNMENT=name); keeps hand edits
	@test -d $(COURSE)/source || $(MAKE) --no-print-directory course COURSE=$(COURSE)
	$(PY) -m autograder release $(COURSE_ARGS)

collect: $(ISTAMP) $(BYTECODE) ## COURSE/downloaded/<assignment>/archive/ -> submitted/, with a report of what was skipped
	$(PY) -m autograder collect $(COURSE_ARGS)

autograde: $(ISTAMP) $(BYTECODE) ## nbgrader autograde, then the hidden tier judged in the sandbox, outside the kernel
	$(PY) -m autograder autograde $(COURSE_ARGS)

STUDENT ?=
ALL ?=
.PHONY: regrade
regrade: $(ISTAMP) $(BYTECODE) ## autograde one student again: STUDENT=id [ASSIGNMENT=name] (same seed); ALL=1: course.toml applied to everyone
	@test -n "$(STUDENT)$(ALL)" || { echo "usage: make regrade STUDENT=id [ASSIGNMENT=name], or make regrade ALL=1" >&2; exit 2; }
	$(PY) -m autograder regrade $(COURSE_ARGS) $(if $(ALL),--all,--student $(STUDENT))

feedback: $(ISTAMP) $(BYTECODE) ## nbgrader generate_feedback: HTML in COURSE/feedback/
	$(PY) -m autograder feedback $(COURSE_ARGS)

export: $(ISTAMP) $(BYTECODE) ## nbgrader export: COURSE/grades.csv (stale grades named) and COURSE/canvas.csv
	$(PY) -m autograder export --root $(COURSE)

FROM ?= $(BATCH_OUT)
.PHONY: class-report
class-report: $(ISTAMP) $(BYTECODE) ## the class as a whole: build/class-report/ (FROM=build/batch or FROM=course): a page per student, similar submissions, Canvas + long CSV
	$(PY) -m autograder class-report --from $(FROM) --out build/class-report $(if $(SUBMISSIONS),--submissions $(SUBMISSIONS)) $(if $(THRESHOLD),--threshold $(THRESHOLD))

# PrairieLearn (instructors): PL_IMAGE=registry/namespace/name:tag names the grading image
# (default docker.io/attentionlab/attention-lab-grader:lock-<digest>: push under your own
# account); PL_START, PL_DUE=YYYY-MM-DD the homework's release and due dates, PL_TIMEZONE.
PL_IMAGE ?=
PL_START ?=
PL_DUE ?=
PL_TIMEZONE ?= UTC
.PHONY: prairielearn
prairielearn: $(STAMP) $(BYTECODE) ## write build/prairielearn/, a PrairieLearn course whose external grader runs the sandbox (PL_IMAGE=, PL_START=, PL_DUE=)
	$(PY) -m autograder prairielearn --out build/prairielearn $(if $(EX),--ex $(EX)) $(if $(PL_IMAGE),--image $(PL_IMAGE)) $(if $(PL_START),--start $(PL_START)) $(if $(PL_DUE),--due $(PL_DUE)) --timezone $(PL_TIMEZONE)

.PHONY: ci-deps
ci-deps: ## system packages the kit's tests use: headless Chromium and a CJK font (apt-get; CI runs it as root)
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@fc-list :lang=zh 2>/dev/null | grep -q . || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei; }

clean: ## remove build outputs (keeps .venv)
	rm -rf build .pytest_cache .ruff_cache .hypothesis
