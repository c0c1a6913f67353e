"""`advisor pareto` (issue 14 item 3): the per-user speed vs throughput-per-GPU frontier of every valid plan."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from advisor.decide.pareto import pareto_mask
from advisor.report.pareto_plot import style

MINIMAX, KIMI = "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"


def test_pareto_mask_by_hand() -> None:
    # (1, 5) and (5, 1) and (3, 3) trade off; (2, 2) is beaten by (3, 3); the second (3, 3) is a twin
    x = np.array([1.0, 5.0, 3.0, 2.0, 3.0])
    y = np.array([5.0, 1.0, 3.0, 2.0, 3.0])
    assert pareto_mask(x, y).tolist() == [True, True, True, False, False]


def test_frontier_points_are_not_dominated_and_the_operating_point_is_the_best_within_the_target(advisor) -> None:
    r = advisor("pareto", MINIMAX, KIMI, "--max-tpot-ms", "50", "--json")
    assert r.code == 0, r.err
    pts = json.loads(r.out)
    for model in (MINIMAX, KIMI):
        mine = [p for p in pts if p["model"] == model]
        assert len({(p["plan"], p["concurrency"]) for p in mine}) == len(mine)
        for p in mine:
            beaten = any(o["per_user_tok_s"] >= p["per_user_tok_s"] and o["output_tok_s_per_gpu"] >=
                         p["output_tok_s_per_gpu"] and (o["per_user_tok_s"] > p["per_user_tok_s"] or
                                                       o["output_tok_s_per_gpu"] > p["output_tok_s_per_gpu"])
                         for o in mine)
            if p["frontier"]:
                assert not beaten, p
            # meets: TPOT within 50 ms, i.e. per-user speed at least 20 tok/s
            assert p["meets"] == (p["tpot_ms"] <= 50)
        (op,) = [p for p in mine if p["operating"]]
        best = max((p for p in mine if p["frontier"] and p["meets"]), key=lambda p: p["output_tok_s_per_gpu"])
        assert op == best


def test_figure_png_and_svg_and_frontier_only_csv(advisor, tmp_path: Path) -> None:
    png, svg = tmp_path / "p.png", tmp_path / "p.svg"
    assert advisor("pareto", MINIMAX, KIMI, "--max-tpot-ms", "50", "-o", str(png)).code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert advisor("pareto", MINIMAX, "-o", str(svg)).code == 0
    assert b"<svg" in svg.read_bytes()[:500]
    r = advisor("pareto", MINIMAX, KIMI, "--frontier-only", "--csv")
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert rows and all(x["frontier"] == "True" for x in rows)


def test_distinct_styles_for_many_models() -> None:
    styles = [style(j) for j in range(60)]
    assert len(set(styles)) == 60


def test_bad_output_name_is_one_line(advisor, tmp_path: Path) -> None:
    r = advisor("pareto", MINIMAX, "-o", str(tmp_path / "p.jpg"))
    assert r.code == 2 and "-o" in r.err and len(r.err.strip().splitlines()) == 1
