"""The verifier registry: one typed spec per container verifier, and the only place a verifier's name is spelt.

A verifier is a plugin: a module with a `TrialVerifier` (and a `from_config` builder) plus one line here. Everything
that handles verifiers in general (`VerificationConfig`, `verify_tasks`, the evolve loop and its recorder, the audit,
SARIF, the CLI's tables) iterates `registered()` and asks a spec what it needs, never a name. What one verifier
needs that others do not is a field of its spec (or a protocol its object meets, asked with isinstance):

- `switch`: how it is turned on. Always on (oracle, invalid-test); on / off / sample:N (the red team); or
  strict-capable, the same plus `strict` (the mutation verifier: a survivor fails the task instead of making it weak);
- `option`: the `VerificationConfig` (and `EvolveConfig`) field holding that switch;
- `builder`: "module:attr" of `(config, *, sample, model, mutant_writer) -> TrialVerifier`, imported when used;
- `subject`: what its findings name ("exploit", "mutant"; None when it finds against its own check only) and
  `subject_class`, how a subject groups into a failure class (a mutant id into its kind);
- `weakens`: a subject it finds broke the tests makes the task weak, not wrong (surviving near misses);
- `reference`: its trials run the reference solution, so a verifier comparing with the solution's end state
  (`ComparesReference`) reads them, fingerprinted;
- `inherits`: "module:attr" of `(metrics, generation) -> keys`, the keys a child candidate reuses from this
  verifier's stored report of its parent (`Inheriting` verifiers take them);
- `hardenable`: `envevo harden` fixes what it finds (the red team's hacks), so a seed only it failed is hardened;
- `audit_part` / `audit_totals`: "module:attr" of what it adds to an audit record and to an audit's summary;
- `blames`: the task files its own failing points at (SARIF locations); `metrics`: the keys its reports' metrics
  carry; `label`: its column in a table.

Names are stored (SQLite rows, audit.jsonl, run configs): they never change once a verifier is released.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from envevo._registry import Entry

if TYPE_CHECKING:
    from envevo.verify._config import VerificationConfig
    from envevo.verify._mutation import MutantWriter
    from envevo.verify._verifiers import TrialVerifier

ORACLE = "oracle"
INVALID_TEST = "invalid_test"
RED_TEAM = "red_team"
MUTATION = "mutation"

TESTS_FILES = ("tests/test.sh", "run-tests.sh", "tests/test_outputs.py", "tests")
SOLUTION_FILES = ("solution/solve.sh", "solution.sh", "solution")


class Switch(StrEnum):
    ALWAYS_ON = "always-on"
    ON_OFF_SAMPLE = "on-off-sample"  # on, off, sample:N
    STRICT_CAPABLE = "strict-capable"  # on, off, sample:N, strict


def parse_switch(option: str, value: str) -> tuple[bool, int | None]:
    """An on/off/sample:N verifier switch (`--red-team`, `--mutation`): 'on' → (True, None), 'off' → (False, None),
    'sample:N' → (True, N); ValueError naming `option` otherwise."""
    v = (value or "off").strip().lower()
    if v == "off":
        return False, None
    if v == "on":
        return True, None
    if v.startswith("sample:"):
        try:
            n = int(v.split(":", 1)[1])
        except ValueError:
            n = 0
        if n >= 1:
            return True, n
    raise ValueError(f"{option} {value!r}: use on, off or sample:N (N ≥ 1)")


def is_strict(value: str | None) -> bool:
    return (value or "").strip().lower() == "strict"


def _identity(subject: str) -> str:
    return subject


@dataclass(frozen=True)
class VerifierSpec:
    name: str
    label: str
    summary: str
    builder: str
    switch: Switch = Switch.ALWAYS_ON
    option: str | None = None
    subject: str | None = None
    subject_class: Callable[[str], str] = _identity
    weakens: bool = False
    reference: bool = False
    inherits: str | None = None
    hardenable: bool = False
    audit_part: str | None = None
    audit_totals: str | None = None
    blames: tuple[str, ...] = TESTS_FILES
    metrics: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return f"--{(self.option or self.name).replace('_', '-')}"

    def parse(self, value: str) -> tuple[bool, int | None]:
        """(on, sample) from this verifier's switch; ValueError naming its option and the accepted values."""
        if self.switch is Switch.ALWAYS_ON:
            return True, None
        if self.switch is Switch.STRICT_CAPABLE:
            if is_strict(value):
                return True, None
            try:
                return parse_switch(self.flag, value)
            except ValueError:
                raise ValueError(f"{self.flag} {value!r}: use on, strict, off or sample:N (N ≥ 1)") from None
        return parse_switch(self.flag, value)

    def strict(self, config: VerificationConfig) -> bool:
        """Its switch says `strict` (only a strict-capable verifier's can)."""
        return (self.switch is Switch.STRICT_CAPABLE and self.option is not None
                and is_strict(getattr(config, self.option)))

    def build(self, config: VerificationConfig, *, model: object | None = None,
              mutant_writer: MutantWriter | None = None) -> TrialVerifier | None:
        """Its verifier as `config` asks for it; None when its switch is off."""
        on, sample = self.parse(getattr(config, self.option)) if self.option is not None else (True, None)
        if not on:
            return None
        made: TrialVerifier = Entry(self.builder).load()(config, sample=sample, model=model,
                                                         mutant_writer=mutant_writer)
        return made

    def load(self, attr: str | None) -> Any:
        return Entry(attr).load() if attr is not None else None


_SPECS: dict[str, VerifierSpec] = {}


def register(spec: VerifierSpec) -> VerifierSpec:
    """Add a verifier (after those registered before it: the order of a verdict's reports and of every table)."""
    if spec.name in _SPECS and _SPECS[spec.name] != spec:
        raise ValueError(f"a verifier named {spec.name!r} is registered already")
    _SPECS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a verifier (a test's toy one); the built-in ones stay."""
    if name in _BUILT_IN:
        raise ValueError(f"{name} is built in")
    _SPECS.pop(name, None)


def registered() -> list[VerifierSpec]:
    return list(_SPECS.values())


def spec_of(name: str) -> VerifierSpec | None:
    """The spec of a verifier by its (stored) name; None for a check that is no registered verifier (the rubric)."""
    return _SPECS.get(name)


def label_of(name: str) -> str:
    """A verifier's column title ("red team"); the name itself for a check that is no registered verifier."""
    spec = _SPECS.get(name)
    return spec.label if spec is not None else name


def verifier_names() -> tuple[str, ...]:
    return tuple(_SPECS)


def switch_options() -> tuple[str, ...]:
    """The config fields that turn verifiers on or off, in registry order."""
    return tuple(s.option for s in _SPECS.values() if s.option is not None)


def _mutant_kind(mutant_id: str) -> str:
    """prefix, wrong or skip, from a mutant's id (prefix-3of7, step2-wrong, step2-skip)."""
    return "prefix" if mutant_id.startswith("prefix-") else mutant_id.rsplit("-", 1)[-1]


_V = "envevo.verify."
for _spec in (
    VerifierSpec(ORACLE, "oracle", "the reference solution reaches reward 1.0 on every run",
                 _V + "_verifiers:OracleVerifier.from_config", reference=True, blames=SOLUTION_FILES),
    VerifierSpec(INVALID_TEST, "invalid-test", "an empty solution fails, and fails because of the tests",
                 _V + "_verifiers:InvalidTestVerifier.from_config"),
    VerifierSpec(RED_TEAM, "red team", "every chosen exploit scores 0",
                 _V + "_redteam:RedTeamVerifier.from_config", Switch.ON_OFF_SAMPLE, option=RED_TEAM,
                 subject="exploit", inherits=_V + "_exploit_keys:resisted_sources", hardenable=True,
                 metrics=("trials_run", "trials_reused", "trials_moot", "resisted_keys", "false_fail")),
    VerifierSpec(MUTATION, "mutation", "near-miss solutions all score 0",
                 _V + "_mutation:MutationVerifier.from_config", Switch.STRICT_CAPABLE, option=MUTATION,
                 subject="mutant", subject_class=_mutant_kind, weakens=True,
                 inherits=_V + "_mutation:inherited_kills", audit_part=_V + "_mutation_audit:mutation_result",
                 audit_totals=_V + "_mutation_audit:mutation_totals",
                 metrics=("source", "run", "killed", "survived", "inconclusive", "equivalent", "equivalent_mutants",
                          "score", "reused", "mutants")),
):
    register(_spec)
_BUILT_IN = frozenset(_SPECS)
