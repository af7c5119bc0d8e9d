# The README's two commands: `make demo` (set up, then run the main job offline) and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
ENVEVO := $(VENV)/bin/envevo
SEEDS  := examples/seeds
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: venv sandbox demo test test-fast clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

# Podman + runc + compose + containers.conf + the seeds' base images; seconds when already in place.
sandbox: venv
	$(ENVEVO) doctor --fix --tasks $(SEEDS) --tasks tests/fixtures/broken

demo: sandbox
	$(ENVEVO) verify $(SEEDS)

test: sandbox
	$(PY) -m pytest -q

# Everything but the tests that start containers.
test-fast: venv
	$(PY) -m pytest -q -m 'not sandbox'

clean:
	rm -rf $(VENV) jobs .pytest_cache
