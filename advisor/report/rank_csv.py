"""`advisor rank --csv`: one line per ranked row, then the models not ranked; the plan as its label and the
command's notes joined by " | "."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from advisor.decide.ranked import Ranking
from advisor.report.sink import write_csv

CSV_COLUMNS = ("rank", "model", "hardware", "plan", "fits", "score", "quality", "quality_benchmark", "quality_source",
               "ttft_ms", "tpot_ms", "per_user_tok_s", "output_tok_s",
               "collectives_per_step", "allreduce_bytes_per_token", "kv_cache_tokens", "bottleneck", "reason",
               "max_users_at_slo", "output_tok_s_at_slo", "binding_limit", "usd_per_mtok", "kwh_per_mtok", "replicas",
               "node_output_tok_s", "spec_tokens", "tokens_per_step", "command", "command_notes", "why")


def rank_csv(ranking: Ranking) -> None:
    write_csv(CSV_COLUMNS, _rows(ranking))


def _rows(ranking: Ranking) -> Iterator[dict[str, Any]]:
    for d in [*ranking.rows, *ranking.unranked]:
        row = d.model_dump(mode="json")
        plan = row.get("plan")
        notes = " | ".join(row.get("command_notes", []))
        yield {**row, "plan": plan["label"] if plan else "", "command_notes": notes}
