# Attention Lab: every user verb is a target. `make help` lists them.
# Each target that runs Python bootstraps .venv (pinned dependencies) when it is missing.

PYTHON3 ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.attention-lab-installed
SUBMISSION ?= assignments
EX ?=
DEVICE ?= cpu
RESULTS ?= build/results.json
export PYTHONPATH := $(CURDIR)
export PYTHONDONTWRITEBYTECODE := 1

.DEFAULT_GOAL := help
.PHONY: help grade test lint format stubs fixtures dist clean venv course release collect autograde feedback export

help: ## list the verbs
	@echo "Attention Lab — make targets"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "Variables: SUBMISSION=dir (default assignments), EX=module, DEVICE=cpu|cuda, VENV=path"

$(STAMP): requirements.lock
	@test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.lock
	@touch $(STAMP)

venv: $(STAMP) ## create .venv with the pinned dependencies

grade: $(STAMP) ## grade SUBMISSION (default assignments/), EX=module for one exercise
	$(PY) -m autograder grade --submission $(SUBMISSION) $(if $(EX),--ex $(EX)) --device $(DEVICE) --results $(RESULTS)

.PHONY: grade-train
grade-train: $(STAMP) ## grade gpt.py with its slow training run (train on data/corpus.txt, a few s)
	$(PY) -m autograder grade --submission $(SUBMISSION) --ex gpt --include-slow --device $(DEVICE) --results build/results-train.json

test: $(STAMP) lint sandbox-deps ## the kit's own tests (what CI runs)
	$(PY) -m pytest -q

lint: $(STAMP) ## ruff lint and format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP) ## ruff format the tree
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

stubs: $(STAMP) ## regenerate assignments/ from solutions/ (instructors)
	$(PY) -m autograder stubs

fixtures: $(STAMP) ## regenerate the public reference outputs from solutions/ (instructors)
	$(PY) -m autograder fixtures

dist: $(STAMP) ## build build/attention-lab-student.tar.gz, the student copy (no solutions)
	$(PY) -m autograder dist --out build/attention-lab-student.tar.gz

.PHONY: bench
bench: $(STAMP) ## peak memory and time of quadratic, chunked, linear attention, T = 1k..16k (DEVICE=cpu|cuda)
	$(PY) bench/attention_memory.py --device $(DEVICE) --json build/bench-$(DEVICE).json

# Batch grading (instructors): SUBMISSIONS=dir of package folders / .zips, BATCH_OUT=dir
SUBMISSIONS ?=
BATCH_OUT ?= build/batch
JOBS ?=
BENCH_N ?= 200
.PHONY: batch gradescope bench-batch

batch: $(STAMP) sandbox-deps ## grade SUBMISSIONS=dir (one folder or .zip per student), sandboxed, in parallel
	@test -n "$(SUBMISSIONS)" || { echo "usage: make batch SUBMISSIONS=dir [BATCH_OUT=build/batch] [JOBS=n]" >&2; exit 2; }
	$(PY) -m autograder batch --submissions $(SUBMISSIONS) --out $(BATCH_OUT) $(if $(EX),--ex $(EX)) $(if $(JOBS),--jobs $(JOBS))

gradescope: $(STAMP) ## build build/autograder.zip for Gradescope (setup.sh, run_autograder)
	$(PY) -m autograder gradescope --out build/autograder.zip $(if $(EX),--ex $(EX))

.PHONY: sandbox-deps
sandbox-deps: ## libseccomp2 (apt, as root) for the sandbox's seccomp filter, if missing
	@ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	       && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libseccomp2 >/dev/null; } \
	  || echo "note: libseccomp2 is missing: make batch refuses to grade without --insecure" >&2

bench-batch: $(STAMP) sandbox-deps ## time make batch against nbgrader autograde on BENCH_N=200 submissions
	$(PY) bench/batch_vs_nbgrader.py --n $(BENCH_N)

# nbgrader course (instructors): COURSE=dir (default course), ASSIGNMENT=name (default all)
COURSE ?= course
ASSIGNMENT ?=
COURSE_ARGS = --root $(COURSE) $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT))

course: $(STAMP) ## generate the nbgrader course (COURSE=course) from solutions/
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	$(PY) -m autograder course --root $(COURSE)

release: $(STAMP) course ## nbgrader generate_assignment: COURSE/release/ (ASSIGNMENT=name)
	$(PY) -m autograder release $(COURSE_ARGS)

collect: $(STAMP) ## nbgrader zip_collect from COURSE/downloaded/<assignment>/archive/
	$(PY) -m autograder collect $(COURSE_ARGS)

autograde: $(STAMP) ## nbgrader autograde COURSE/submitted/ (hidden tests included)
	$(PY) -m autograder autograde $(COURSE_ARGS)

feedback: $(STAMP) ## nbgrader generate_feedback: HTML in COURSE/feedback/
	$(PY) -m autograder feedback $(COURSE_ARGS)

export: $(STAMP) ## nbgrader export: COURSE/grades.csv
	$(PY) -m autograder export --root $(COURSE)

clean: ## remove build outputs (keeps .venv)
	rm -rf build .pytest_cache .ruff_cache .hypothesis
