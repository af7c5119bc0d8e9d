"""The trainer-side bookkeeping every adapter shares, host-side: an export row whose task dir is gone or changed is
refused by name; the per-step curriculum log records lineage, generation and the scheduler's frontier, moving every
lineage on when every group passed and holding them when none did; `envevo report RUN` shows the log."""

from __future__ import annotations

import json
import shutil

import pytest

from envevo.schedule import ScheduleError
from envevo.trainers._base import build_scheduler, read_export_index
from envevo.trainers._steplog import TRAINING_LOG_DIR, StepLog
from tests.trainers._trainer_support import rl_export


def test_a_row_whose_task_dir_is_missing_or_changed_is_refused_by_name(tmp_path):
    export = rl_export(tmp_path, lineages=2, generations=2)
    rows = read_export_index(export)
    assert len(rows) == 4 and all(r["task_hash"] for r in rows)
    changed = export / "tasks" / "lin1__g01"
    (changed / "instruction.md").write_text("do something else entirely\n")
    with pytest.raises(ScheduleError, match=r"'lin1__g01'.*changed since the export"):
        read_export_index(export)
    shutil.rmtree(changed)
    with pytest.raises(ScheduleError, match=r"'lin1__g01'.*is missing"):
        read_export_index(export)


def _run_steps(export, reward: float, steps: int = 2):
    rows = read_export_index(export)
    scheduler = build_scheduler("el", rows=rows, group_size=2, tau=0.75)
    log = StepLog(export.parent / "run" / TRAINING_LOG_DIR / f"r{reward}.jsonl", rows)
    for step in range(1, steps + 1):
        served = scheduler.next(2)
        obs = [scheduler.observe(e, [reward, reward]) for e in served]
        log.record(step, scheduler, obs, [[reward, reward]] * len(obs))
    return [json.loads(line) for line in log.path.read_text().splitlines()]


def test_every_pass_moves_every_lineage_on_and_no_pass_holds_them(tmp_path):
    export = rl_export(tmp_path, lineages=2, generations=2)
    passed = _run_steps(export, 1.0)
    first = passed[0]
    assert sorted((g["lineage"], g["generation"]) for g in first["groups"]) == [("lin0", 0), ("lin1", 0)]
    assert all(g["advanced"] for g in first["groups"])
    assert first["scheduler"]["lineages"] == {"lin0": 1, "lin1": 1}  # both moved on to generation 1
    assert first["scheduler"]["tau"] == 0.75 and first["scheduler"]["group_size"] == 2
    assert passed[1]["scheduler"]["lineages"] == {"lin0": None, "lin1": None}  # every generation passed
    held = _run_steps(export, 0.0)
    assert all(not g["advanced"] and g["generation"] == 0 for s in held for g in s["groups"])
    assert all(s["scheduler"]["lineages"] == {"lin0": 0, "lin1": 0} for s in held)


def test_envevo_report_shows_the_training_log(tmp_path):
    from envevo.report import build_report

    export = rl_export(tmp_path, lineages=2, generations=2)
    _run_steps(export, 1.0)
    with (tmp_path / "run" / TRAINING_LOG_DIR / "r1.0.jsonl").open("a") as f:
        f.write("not json\n")
    page = build_report(tmp_path / "run").read_text()
    assert "Training curriculum" in page and "r1.0.jsonl" in page
    assert "lin0 g0: 2/2 → passed" in page and "lin0: done" in page and "1 unreadable line(s) skipped" in page
