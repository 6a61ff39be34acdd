# The two commands of the README: `make demo` and `make test`. Each creates .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint typecheck unit live install-check bench mutate clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# The examples need langgraph and the OpenAI clients, nothing else (no dev tools, no llama-cpp).
$(VENV)/.installed-examples: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[examples]'
	touch $@

# llama-cpp-python compiles from source; a native build (-march=native, AVX-512, AMX) crashed
# with "Illegal instruction" on the CI machines, so build it portably.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

$(VENV)/.installed-live: $(VENV)/.installed-dev pyproject.toml
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet -e '.[dev,live]'
	touch $@

demo: $(VENV)/.installed-examples
	$(PY) examples/demo.py

# The live tier: a real Gemma 3 270M over HTTP, recorded, then replayed with no server.
live: $(VENV)/.installed-live
	$(PY) -m pytest -m live -p no:cacheprovider -q tests/live

# The light install: `pip install --dry-run --report '.[langchain]'` brings no llama-index package.
install-check: $(VENV)/.installed-dev
	$(PY) -m pytest -m install -p no:cacheprovider -q tests/core/test_light_install.py

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check core integrations tests examples benchmarks
	$(PY) -m ruff format --check core integrations tests examples benchmarks
	$(PY) tests/lint_layers.py
	$(PY) tests/lint_private.py
	$(PY) tests/lint_state.py
	$(PY) tests/lint_complexity.py

typecheck: $(VENV)/.installed-dev
	$(PY) -m mypy

unit: $(VENV)/.installed-dev
	$(PY) -m pytest -q -n 2

test: lint typecheck unit

$(VENV)/.installed-bench: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $@

# Every benchmark BENCH_RUNS times (default 3), the load of each run recorded; all runs written to
# benchmarks/results/<date>-<time>.md and the README tables regenerated from that file.
BENCH_RUNS ?= 3
bench: $(VENV)/.installed-bench
	$(PY) benchmarks/run_all.py --runs $(BENCH_RUNS)

$(VENV)/.installed-mutation: $(VENV)/.installed-dev pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev,mutation]'
	touch $@

# Mutation testing of the request key (core/normalize.py, core/cassette.py, both request
# builders) with mutmut, in a staged copy under build/mutation. Slow (tens of minutes on two
# cores); not part of `make test`. MUTATE_ARGS=--no-stage resumes a stopped run.
mutate: $(VENV)/.installed-mutation
	$(PY) tests/mutation/run.py $(MUTATE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build/mutation
