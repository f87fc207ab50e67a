# The two commands users need: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: test demo lint typecheck venv clean

venv: $(VENV)/.installed

# torch first, from the local CPU build (pip only); the constraints file keeps
# every later install from replacing it with a CUDA build.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -c constraints.txt -e '.[dev,train,verl,recipes]'
	touch $@

test: venv
	$(PY) -m pytest

lint: venv
	$(VENV)/bin/ruff check agentspec tests benchmarks
	$(VENV)/bin/ruff format --check agentspec tests benchmarks

typecheck: venv
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
