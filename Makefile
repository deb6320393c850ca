# The two commands of the README. Each creates .venv (Python 3.12) when it is missing,
# installs the project into it, and runs.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
INSTALL := $(PY) -m pip install -q -e '.[test,numba]'

# python3.12 from PATH when it runs; else pyenv's 3.12 (its shim fails when 3.12 is not the
# global version).
PYTHON312 := $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 \
	/usr/local/bin/python3.12 /usr/bin/python3.12; do \
	$$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { echo $$p; break; }; done)

.PHONY: demo test lint fuzz experiments docs explain-docs clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON312)" || { echo "error: Python 3.12 not found (install python3.12)"; exit 1; }
	@test -x $(PY) || $(PYTHON312) -m venv $(VENV)
	@# A download that arrives corrupt (pip: "do not match the hashes") is retried without pip's
	@# cache, twice, before the install fails.
	$(INSTALL) || { sleep 5; $(INSTALL) --no-cache-dir; } || { sleep 30; $(INSTALL) --no-cache-dir; }
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) -m eqsat_ad.demo

test: $(STAMP)
	$(PY) -m ruff check eqsat_ad tests experiments
	$(PY) -m pytest -p no:cacheprovider -n 2 --dist loadfile tests

# Differential fuzzing (interpreter vs compiled, optimize=False vs optimized, gradients vs finite
# differences): FUZZ_N programs from seed FUZZ_SEED; minimized reproducers go to FUZZ_OUT.
# FUZZ_BACKEND=numba compiles them with the fused loop backend instead of NumPy.
# Exits non-zero when it finds a defect.
FUZZ_N ?= 200
FUZZ_SEED ?= 0
FUZZ_OUT ?= fuzz_out
FUZZ_TIME_LIMIT ?= 60
FUZZ_BACKEND ?= numpy

fuzz: $(STAMP)
	$(PY) -m eqsat_ad.fuzz --n $(FUZZ_N) --seed $(FUZZ_SEED) --out $(FUZZ_OUT) \
		--time-limit $(FUZZ_TIME_LIMIT) --backend $(FUZZ_BACKEND)

lint: $(STAMP)
	$(PY) -m ruff check eqsat_ad tests experiments

experiments: $(STAMP)
	$(PY) -m pip install -q -e '.[experiments]'
	$(PY) experiments/paper_examples.py
	$(PY) experiments/peers.py
	$(PY) experiments/tangent_benchmarks.py
	$(PY) experiments/sweep.py

# docs/api.md from the docstrings (a test checks it is up to date)
docs: $(STAMP)
	$(PY) -m eqsat_ad.docs

# docs/explain/: rewrite chains, e-graph pictures and pages of three examples, by the CLI
EXPLAIN := $(PY) -m eqsat_ad explain
explain-docs: $(STAMP)
	mkdir -p docs/explain
	$(EXPLAIN) docs/examples/ktrace.py --sizes N=1000 \
		--html docs/explain/ktrace.html --svg docs/explain/ktrace.svg > docs/explain/ktrace.txt
	$(EXPLAIN) docs/examples/matrix_chain.py --wrt A B C --sizes N=1000 R=10 \
		--html docs/explain/matrix_chain.html --svg docs/explain/matrix_chain.svg \
		> docs/explain/matrix_chain.txt
	$(EXPLAIN) docs/examples/prefix_sum.py --wrt x --sizes N=1000 \
		--html docs/explain/prefix_sum.html --svg docs/explain/prefix_sum.svg \
		> docs/explain/prefix_sum.txt

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache fuzz_out
