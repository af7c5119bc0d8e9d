"""`import envevo.llm` is light: model plumbing only, never the loop, the store, the verifiers or the runtime."""

from __future__ import annotations

import subprocess
import sys


def _loaded_packages(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted({{m.split('.')[1] for m in sys.modules if m.startswith('envevo.')}})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_envevo_llm_loads_no_higher_or_sandbox_layer() -> None:
    loaded = _loaded_packages("import envevo.llm")
    assert not loaded & {"evolve", "store", "verify", "runtime", "sandbox", "rollout", "cli"}, loaded


def test_the_simulated_agents_load_without_harbor() -> None:
    code = "import sys, envevo.rollout.agents, envevo.runtime; print('harbor' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
