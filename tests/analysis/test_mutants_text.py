"""How a version's mutation score reads in `lineage show` and the report."""

from envevo.analysis import killed_text


def test_reused_kills_count_in_both_sides_of_the_score():
    # 2 mutants run and killed, 2 reused from the parent (killed there on the same inputs): 4 of 4, never 4/2.
    assert killed_text({"run": 2, "reused": 2, "killed": 4, "survived": 0}) == "4/4"
    assert killed_text({"run": 0, "reused": 3, "killed": 3, "survived": 0}) == "3/3"
    assert killed_text({"run": 4, "killed": 3, "survived": 1}) == "3/4"  # a report from before reuse existed
    assert killed_text({"run": 0, "killed": 0}) == "" and killed_text(None) == ""
