"""`advisor pareto` without a figure: per model its frontier points and operating point as lines, or every point
as CSV. Renders what `decide/pareto.py` computed."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.decide.pareto import Frontier, ParetoPoint
from advisor.report.sink import line, write_csv
from advisor.text import plural

CSV_COLUMNS = ("model", "hardware", "plan", "gpus", "concurrency", "per_user_tok_s", "output_tok_s_per_gpu",
               "tpot_ms", "ttft_ms", "frontier", "meets", "operating")


def pareto_lines(front: Frontier, figure: str | None) -> None:
    """Per model: frontier points of all, the operating point (or none within the targets), each frontier point;
    then where the figure went."""
    for model in front.models():
        mine = [p for p in front.points if p.model == model]
        edge = sorted((p for p in mine if p.frontier), key=lambda p: -p.output_tok_s_per_gpu)
        op = next((p for p in mine if p.operating), None)
        where = (f"operating point {op.plan} at {plural(op.concurrency, 'user')}: "
                 f"{op.output_tok_s_per_gpu:,.0f} tok/s per GPU, {op.per_user_tok_s:,.1f} tok/s per user" if op
                 else "no point within the targets")
        line(f"{model}: {len(edge)} frontier points of {len(mine)}; {where}")
        for p in edge:
            users = "user " if p.concurrency == 1 else "users"
            line(f"   {p.plan:14s} {p.concurrency:5,d} {users}  {p.per_user_tok_s:8.1f} tok/s/user  "
                 f"{p.output_tok_s_per_gpu:9.1f} tok/s/GPU{'' if p.meets else '  (misses the targets)'}")
    if figure:
        line(f"figure: {figure}")


def pareto_csv(points: Sequence[ParetoPoint]) -> None:
    write_csv(CSV_COLUMNS, (p.model_dump() for p in points))
