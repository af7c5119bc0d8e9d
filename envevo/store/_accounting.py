"""Accounting: rollouts of agents on task versions, and the tokens and cost of every LLM call."""

from __future__ import annotations

from typing import Any

from envevo.store._base import StoreBase
from envevo.store._encode import now
from envevo.store._models import NewRollout, Rollout, Usage, UsageTotal


class Accounting(StoreBase):
    def add_rollout(self, rollout: NewRollout) -> int:
        """Record rollout ``k`` of ``agent``/``model`` on a task version; re-recording the same k replaces it."""
        return self._db.insert(
            "INSERT INTO rollouts (task_hash, agent, model, k, reward, turns, input_tokens, output_tokens, cost_usd, "
            "duration_s, error_kind, simulated, trial_dir, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (task_hash, agent, model, k) DO UPDATE SET reward = excluded.reward, turns = excluded.turns, "
            "input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd, "
            "duration_s = excluded.duration_s, error_kind = excluded.error_kind, simulated = excluded.simulated, "
            "trial_dir = excluded.trial_dir, created_at = excluded.created_at RETURNING id",
            (
                rollout.task_hash,
                rollout.agent,
                rollout.model or "",  # '' when there is none, so (task, agent, model, k) is a real key
                rollout.k,
                rollout.reward,
                rollout.turns,
                rollout.input_tokens,
                rollout.output_tokens,
                rollout.cost_usd,
                rollout.duration_s,
                rollout.error_kind,
                int(rollout.simulated),
                rollout.trial_dir,
                now(),
            ),
        )

    def rollouts(
        self, task_hash: str | None = None, *, agent: str | None = None, model: str | None = None
    ) -> list[Rollout]:
        where: list[str] = []
        params: list[Any] = []
        for col, val in (("task_hash", task_hash), ("agent", agent), ("model", model)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        sql = (
            "SELECT * FROM rollouts"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + " ORDER BY task_hash, agent, model, k"
        )
        return [
            Rollout(**{**dict(r), "model": r["model"] or None, "simulated": bool(r["simulated"])})
            for r in self._rows(sql, params)
        ]

    def add_usage(
        self,
        role: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        model: str | None = None,
        cost_usd: float | None = None,
        lineage_id: str | None = None,
        generation: int | None = None,
        estimated: bool = False,
    ) -> int:
        """Record the tokens (and cost) one LLM role spent, optionally attributed to a lineage generation;
        `estimated` when they were counted from what arrived, not reported by the server."""
        return self._db.insert(
            "INSERT INTO usage (lineage_id, generation, role, model, input_tokens, output_tokens, cost_usd, estimated, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (lineage_id, generation, role, model, input_tokens, output_tokens, cost_usd, int(estimated), now()),
            missing=f"run {self.run_dir} has no lineage {lineage_id!r}",
        )

    def usage(self, lineage_id: str | None = None) -> list[Usage]:
        if lineage_id is None:
            rows = self._rows("SELECT * FROM usage ORDER BY id")
        else:
            rows = self._rows("SELECT * FROM usage WHERE lineage_id = ? ORDER BY id", (lineage_id,))
        return [Usage(**{**dict(r), "estimated": bool(r["estimated"])}) for r in rows]

    def usage_totals(self, lineage_id: str | None = None, *, outside_lineages: bool = False) -> list[UsageTotal]:
        """Tokens and cost per (role, model): of one lineage, of the calls attributed to none (`outside_lineages`:
        extracting and judging seeds, before their lineage exists), or of the whole run. Cost is None when no call of
        the group reported one."""
        if outside_lineages and lineage_id is not None:
            raise ValueError("usage_totals: a lineage_id, or outside_lineages, not both")
        where, params = ("WHERE lineage_id = ?", (lineage_id,)) if lineage_id is not None else ("", ())
        if outside_lineages:
            where = "WHERE lineage_id IS NULL"
        rows = self._rows(
            "SELECT role, model, COUNT(*) AS calls, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, "
            f"SUM(cost_usd) AS cost_usd, SUM(estimated) AS estimated_calls FROM usage {where} "
            "GROUP BY role, model ORDER BY role, model",
            params,
        )
        return [UsageTotal(**dict(r)) for r in rows]
