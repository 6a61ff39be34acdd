# The two commands of the README: `make demo` and `make test`. Each creates .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint typecheck unit clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/demo.py

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check core integrations tests examples benchmarks
	$(PY) -m ruff format --check core integrations tests examples benchmarks

typecheck: $(VENV)/.installed-dev
	$(PY) -m mypy

unit: $(VENV)/.installed-dev
	$(PY) -m pytest -q -n 2

test: lint typecheck unit

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
