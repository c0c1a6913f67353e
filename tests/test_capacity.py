"""Capacity planning (issue 14): users at a latency target, $ and kWh per million output tokens, replicas.
Expected values are worked out from `predict`-level evaluations and closed forms, not copied from the output."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import assert_one_line

from advisor.catalog import lookup
from advisor.cost.plan import Plan
from advisor.cost.sweep import evaluate, make_case
from advisor.cost.workload import Settings
from advisor.hardware import load_profile

MINIMAX, KIMI = "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"
RTX = "rtx-pro-6000-server"


def _rank(advisor, *args: str) -> list[dict]:
    r = advisor("rank", *args, "--json")
    assert r.code == 0, r.err
    return [d for d in json.loads(r.out) if d["rank"]]


def _plan(ranked: dict) -> Plan:
    """The plan a ranked result chose (every parallel size, pipeline stages included)."""
    return Plan(**{k: ranked["plan"][k] for k in ("tp", "pp", "dp", "ep")})


def _by_hand(model: str, plan: Plan, max_tpot_ms: float | None = None, max_ttft_ms: float | None = None
             ) -> tuple[int, float, np.ndarray, np.ndarray]:
    """Every integer concurrency 1..1024 predicted for one plan under the shipped terms; the most users within the
    limits (TPOT and TTFT grow with users), its tok/s, and the TPOT/TTFT series."""
    from advisor.calibrate.store import terms_for

    hw = load_profile(RTX)
    case = make_case(lookup(model).arch, plan, hw, Settings())
    users = np.arange(1, 1025, dtype=float)
    out = evaluate([case], terms_for(hw, "vllm")[0], users, np.array([1024]), np.array([1024])).out
    tpot, ttft = out["tpot_s"][0, :, 0] * 1e3, out["ttft_s"][0, :, 0] * 1e3
    ok = np.ones(users.size, bool)
    if max_tpot_ms is not None:
        ok &= tpot <= max_tpot_ms
    if max_ttft_ms is not None:
        ok &= ttft <= max_ttft_ms
    n = int(np.argmax(~ok)) if not ok.all() else users.size
    return n, (float(out["output_tok_s"][0, n - 1, 0]) if n else 0.0), tpot, ttft


def test_users_at_a_tpot_target_match_every_concurrency_predicted(advisor) -> None:
    (mm,) = [d for d in _rank(advisor, MINIMAX, "--max-tpot-ms", "50")]
    users, tok_s, tpot, _ = _by_hand(MINIMAX, _plan(mm), max_tpot_ms=50)
    assert 1 < users < 1024
    assert mm["max_users_at_slo"] == users and mm["binding_limit"] == "TPOT"
    assert tpot[users - 1] <= 50 < tpot[users]  # the next user breaks the target
    assert mm["output_tok_s_at_slo"] == pytest.approx(tok_s, rel=1e-9)


def test_the_binding_limit_is_the_one_the_next_user_breaks(advisor) -> None:
    (mm,) = _rank(advisor, MINIMAX, "--max-tpot-ms", "50", "--max-ttft-ms", "150")
    plan = _plan(mm)
    users, _, tpot, ttft = _by_hand(MINIMAX, plan, 50, 150)
    assert mm["max_users_at_slo"] == users
    nxt = users  # index of the first user past the limits
    want = "TPOT" if tpot[nxt] / 50 >= ttft[nxt] / 150 else "TTFT"
    assert mm["binding_limit"] == want


def test_not_even_one_user_within_an_impossible_target(advisor) -> None:
    (mm,) = _rank(advisor, MINIMAX, "--max-tpot-ms", "1")
    assert mm["max_users_at_slo"] == 0 and mm["binding_limit"] == "TPOT" and mm["output_tok_s_at_slo"] == 0
    out = advisor("rank", MINIMAX, "--max-tpot-ms", "1").out
    assert "not one user within TPOT <= 1 ms (TPOT binds)" in out


def test_cost_and_energy_per_million_tokens_by_closed_form(advisor) -> None:
    rows = _rank(advisor, MINIMAX, KIMI, "--max-tpot-ms", "50", "--gpu-hour-price", "2")
    hw = load_profile(RTX)
    for d in rows:
        gpus, tok_s = d["plan"]["gpus"], d["output_tok_s_at_slo"]
        assert tok_s > 0
        # $2 per GPU-hour x GPUs / (tok/s x 3600 s) x 1e6 tokens
        assert d["usd_per_mtok"] == pytest.approx(2 * gpus / (tok_s * 3600) * 1e6, rel=1e-9)
        # every GPU at its 600 W board power (hwprofiles/rtx-pro-6000-server.toml, sourced): J per token -> kWh
        assert hw.gpu.power_w == 600
        assert d["kwh_per_mtok"] == pytest.approx(600 * gpus / tok_s * 1e6 / 3.6e6, rel=1e-9)
    out = advisor("rank", MINIMAX, KIMI, "--max-tpot-ms", "50", "--gpu-hour-price", "2").out
    flat = " ".join(out.split())
    for d in rows:
        each = " on each replica" if d["replicas"] > 1 else ""  # users at the SLO are one replica's
        assert f"{d['max_users_at_slo']:,} users{each} within TPOT <= 50 ms" in flat
        assert f"${d['usd_per_mtok']:,.2f} per million output tokens there at $2/GPU-hour" in flat
        assert f"{d['kwh_per_mtok']:,.2f} kWh per million output tokens (upper bound" in flat


def test_no_price_no_dollars(advisor) -> None:
    (mm,) = _rank(advisor, MINIMAX, "--max-tpot-ms", "50")
    assert mm["usd_per_mtok"] is None and mm["kwh_per_mtok"] is not None


def test_replicas_of_a_plan_smaller_than_the_node(advisor) -> None:
    (mm,) = _rank(advisor, MINIMAX, "--max-tpot-ms", "50")
    if mm["plan"]["gpus"] == 4:  # TP4 of 8 GPUs: two copies side by side
        assert mm["replicas"] == 2
        assert mm["node_output_tok_s"] == pytest.approx(2 * mm["output_tok_s_at_slo"])
        assert mm["command"].startswith("CUDA_VISIBLE_DEVICES=0,1,2,3 ")
    (kimi,) = _rank(advisor, KIMI, "--max-tpot-ms", "50")
    assert kimi["plan"]["gpus"] == 8 and kimi["replicas"] == 1


def test_capacity_columns_in_csv(advisor) -> None:
    import csv
    import io

    r = advisor("rank", MINIMAX, "--max-tpot-ms", "50", "--gpu-hour-price", "2", "--csv")
    assert r.code == 0, r.err
    (row,) = [x for x in csv.DictReader(io.StringIO(r.out)) if x["rank"]]
    assert int(row["max_users_at_slo"]) > 1 and row["binding_limit"] == "TPOT"
    assert float(row["usd_per_mtok"]) > 0 and float(row["kwh_per_mtok"]) > 0


@pytest.mark.parametrize("price", ["0", "-1", "abc"])
def test_a_bad_price_is_refused_naming_the_flag(advisor, price: str) -> None:
    # typer's own usage error (usage line, hint, then the error naming the flag), exit 2, no traceback
    r = advisor("rank", MINIMAX, "--gpu-hour-price", price)
    assert r.code == 2 and "Traceback" not in r.err
    assert "--gpu-hour-price" in r.err.strip().splitlines()[-1]


def test_boxes_side_by_side_ranked_jointly_by_cost(advisor) -> None:
    # "which box for Kimi-K2.5 at 64 users under 50 ms TPOT": one row per box, each priced at its own rate, ranked
    # by $/Mtok among the rows that meet the target
    args = (KIMI, "--hw", RTX, "--hw", "h200-sxm", "--objective", "goodput", "--concurrency", "64",
            "--max-tpot-ms", "50", "--gpu-hour-price", "1.5", "--gpu-hour-price", "3.5")
    rows = _rank(advisor, *args)
    assert {d["hardware"] for d in rows} == {RTX, "h200-sxm"}
    price = {RTX: 1.5, "h200-sxm": 3.5}
    for d in rows:
        assert d["gpu_hour_price"] == price[d["hardware"]]
        # goodput: priced at its scored point (the best tok/s within the target, up to 64 users)
        assert d["workload"]["concurrency"] <= 64
        assert d["usd_per_mtok"] == pytest.approx(price[d["hardware"]] * d["plan"]["gpus"]
                                                  / (d["output_tok_s"] * 3600) * 1e6, rel=1e-9)
    meeting = [d for d in rows if d["meets"]]
    assert [d["usd_per_mtok"] for d in meeting] == sorted(d["usd_per_mtok"] for d in meeting)
    assert [d["rank"] for d in rows] == list(range(1, len(rows) + 1))
    out = advisor("rank", *args).out
    assert f"{KIMI} on h200-sxm" in " ".join(out.split())


def test_one_price_per_box_or_one_for_all(advisor) -> None:
    r = advisor("rank", KIMI, "--hw", RTX, "--hw", "h200-sxm", "--gpu-hour-price", "1", "--gpu-hour-price", "2",
                "--gpu-hour-price", "3")
    assert_one_line(r, "--gpu-hour-price", "one per --hw (2), not 3")


def test_readme_capacity_block_is_current(advisor) -> None:
    # scripts/capacity_examples.py writes it; a physics or catalog change that moves these numbers must regenerate it
    from conftest import REPO

    from scripts.readme_block import read_block

    block = read_block("capacity")  # docs/capacity.md
    for d in _rank(advisor, MINIMAX, KIMI, "--max-tpot-ms", "50", "--gpu-hour-price", "2"):
        assert (f"| {d['model']} | {d['plan']['label']} | {d['max_users_at_slo']:,} | {d['binding_limit']} | "
                f"{d['output_tok_s_at_slo']:,.0f} | {d['usd_per_mtok']:.2f} | {d['kwh_per_mtok']:.2f} |") in block
    assert (REPO / "docs" / "pareto_case_study.png").read_bytes()[:4] == b"\x89PNG"


def test_users_that_would_wait_for_a_slot_do_not_count(advisor) -> None:
    # a loose TPOT target on a plan with little KV room: the engine's running batch binds before TPOT does
    from advisor.calibrate.store import terms_for

    (d,) = _rank(advisor, KIMI, "--max-tpot-ms", "100000", "--input-len", "32768", "--output-len", "1024")
    assert d["binding_limit"] == "running"
    hw = load_profile(RTX)
    case = make_case(lookup(KIMI).arch, Plan(tp=d["plan"]["tp"], dp=d["plan"]["dp"], ep=d["plan"]["ep"],
                                             pp=d["plan"]["pp"]), hw, Settings(max_model_len=32768 + 1024))
    users = np.array([d["max_users_at_slo"], d["max_users_at_slo"] + 1], dtype=float)
    out = evaluate([case], terms_for(hw, "vllm")[0], users,
                   np.array([32768]), np.array([1024])).out
    assert out["running"][0, 0, 0] == users[0] and out["running"][0, 1, 0] < users[1]
