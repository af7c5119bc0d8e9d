"""Capabilities are derived from what a scenario implements; skills may only require capabilities that exist."""

import hashlib
import json
import random

import pytest

from envevo.catalog import CAPABILITIES, SCENARIOS, SKILLS, Kind, Scenario, Skill, graph
from envevo.catalog import _recipes as R
from envevo.catalog.scenarios import RECIPES, NoRecipe, capabilities


def test_a_scenario_offers_exactly_the_recipes_it_overrides_and_its_row_shape():
    class OnlyGrep(Scenario):
        id, title, where, groups = "only_grep", "a test place", "somewhere", ("a", "b")

        def grep(self, inst):
            return R.GrepSrc(regex=lambda g: g, wrong=lambda g: g, extract="cat")

    assert OnlyGrep.caps == {"grep", "unique"}

    class DeclaredGrep(Scenario):  # a recipe declared as data counts as implemented
        id, title, where, groups = "declared_grep", "a test place", "somewhere", ("a", "b")
        recipes = {"grep": {"regex": "^{g}$", "wrong": "-w '{g}'", "extract": "cut -f1", "files": "/app/x"}}

    assert DeclaredGrep.caps == {"grep", "unique"}
    assert DeclaredGrep().grep(None).cmd("a") == "grep -E '^a$' /app/x | cut -f1"

    class ManyRowsWithDates(OnlyGrep):
        per_key = (1, 3)
        date_label = "seen_at"

        def awk(self, inst, path=None):
            return R.AwkSrc(prog="{ emit($1, $2, $3, $4) }")

    assert ManyRowsWithDates.caps == {"grep", "awk", "multi", "dates"}
    with pytest.raises(NoRecipe):
        OnlyGrep().sql(None)


def test_every_catalog_scenario_caps_match_what_it_implements_or_declares():
    for sc in SCENARIOS.values():
        overridden = {name for name in RECIPES if getattr(type(sc), name) is not getattr(Scenario, name)}
        assert sc.caps & set(RECIPES) == overridden | set(type(sc).recipes), sc.id
        for name in sc.caps & set(RECIPES) - {"sed"}:  # each offered recipe really answers (sed needs no rows)
            assert getattr(sc, name)(sc.make(random.Random(0), ["vega", "rigel"])) is not None, (sc.id, name)
        assert sc.caps == capabilities(type(sc))
        assert ("multi" in sc.caps) != ("unique" in sc.caps), sc.id


def test_a_skill_cannot_require_a_capability_no_scenario_can_offer():
    with pytest.raises(TypeError, match="telepathy"):
        class Psychic(Skill):  # noqa: F841 - defining it is the test
            id, title, out = "psychic", "reading minds", Kind.KEYS
            requires = frozenset({"grep", "telepathy"})


def test_every_required_capability_is_offered_somewhere():
    offered = set().union(*(sc.caps for sc in SCENARIOS.values()))
    for sk in SKILLS.values():
        assert sk.requires <= CAPABILITIES
        assert sk.requires <= offered, sk.id


def test_the_compatibility_graph_is_the_one_the_declared_capabilities_gave():
    # Pinned when capabilities stopped being declared strings: deriving them must not move a single edge.
    digest = hashlib.sha256(json.dumps(graph(), sort_keys=True).encode()).hexdigest()
    assert digest == "0474ab6020f20e871b2b32c66fa13c856cec8636bd1666599233a63071922898"
