# The two commands of the README. Each creates .venv (Python 3.12) when it is missing,
# installs the project into it, and runs.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# python3.12 from PATH when it runs; else pyenv's 3.12 (its shim fails when 3.12 is not the
# global version).
PYTHON312 := $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 \
	/usr/local/bin/python3.12 /usr/bin/python3.12; do \
	$$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { echo $$p; break; }; done)

.PHONY: demo test lint experiments clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON312)" || { echo "error: Python 3.12 not found (install python3.12)"; exit 1; }
	@test -x $(PY) || $(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test,numba]'
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) -m eqsat_ad.demo

test: $(STAMP)
	$(PY) -m ruff check eqsat_ad tests experiments
	$(PY) -m pytest -p no:cacheprovider tests

lint: $(STAMP)
	$(PY) -m ruff check eqsat_ad tests experiments

experiments: $(STAMP)
	$(PY) -m pip install -q -e '.[experiments]'
	$(PY) experiments/paper_examples.py
	$(PY) experiments/peers.py
	$(PY) experiments/tangent_benchmarks.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
