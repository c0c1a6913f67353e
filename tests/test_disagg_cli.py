"""The disaggregated CLI (`commands/disagg.py`): `rank --mode agg|disagg|auto`, `predict --prefill-*/--decode-*` and
`pareto --mode`, human and --json, against the decide/cost functions they call; bad input is one line and exit 2;
`--mode agg` (the default) answers as before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import catalog_arch

from advisor.calibrate.store import terms_for
from advisor.cost.disagg import make_disagg
from advisor.cost.disagg_predict import predict_disagg
from advisor.cost.plan import Plan
from advisor.cost.workload import Settings
from advisor.decide.disagg import search
from advisor.decide.disagg_pareto import front_mask
from advisor.decide.disagg_verdict import DisaggQuery
from advisor.hardware import load_profile

MINIMAX = "MiniMaxAI/MiniMax-M2.5"
AUTO = ("rank", MINIMAX, "--mode", "auto", "--input-len", "8192", "--output-len", "1024", "--max-tpot-ms", "30")
POOLS = ("--prefill-tp", "2", "--prefill-dp", "2", "--prefill-ep", "4", "--decode-tp", "2", "--decode-dp", "2",
         "--decode-ep", "4")


def test_rank_auto_on_the_pcie_box_is_the_search_s_verdict(advisor: Any) -> None:
    """The issue's question on the default 8x RTX PRO 6000 box: aggregated wins, and the why names the PCIe
    transfer and its time; every number is the search's (`decide/disagg.py: search`)."""
    r = advisor(*AUTO, "--json")
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    hw = load_profile("rtx-pro-6000-server")
    v = search(catalog_arch(MINIMAX), hw, Settings(max_model_len=32768), terms_for(hw, "vllm")[0],
               DisaggQuery(input_len=8192, output_len=1024, max_tpot_ms=30))
    assert row["serve"] == v.winner == "aggregated" and row["meets"]
    assert v.aggregated is not None and v.disaggregated is not None
    assert row["score"] == pytest.approx(v.aggregated.total_tok_s, rel=1e-9)
    assert row["verdict"]["disaggregated"]["total_tok_s"] == pytest.approx(v.disaggregated.total_tok_s, rel=1e-9)
    assert row["why"] == v.reason
    p = v.disaggregated.prediction
    ms = (p.kv_recv_mb or 0) * 1e6 / 50.97e9 * 1e3  # the decode GPU's KV over the measured cross-socket PCIe
    assert f"over PCIe peer-to-peer across sockets (51.0 GB/s per GPU) it takes {ms:.1f} ms" in row["why"][1]
    assert [c["role"] for c in row["commands"]] == ["server"]  # aggregated wins: its one server
    assert any("2 replicas of TP2+PP2" in n for n in row["command_notes"])


def test_rank_auto_human_output_names_the_transfer(advisor: Any) -> None:
    r = advisor(*AUTO, columns=200)
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    assert "aggregated wins: 730 against 532 output tok/s on 8 GPUs within TPOT <= 30 ms (1.37x)" in text
    assert "over PCIe peer-to-peer across sockets (51.0 GB/s per GPU) it takes 20.4 ms" in text
    assert "server (node 0, GPUs 0,1,2,3): CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve MiniMaxAI/MiniMax-M2.5" in text


def test_rank_disagg_answers_with_the_deployment_and_its_commands(advisor: Any) -> None:
    r = advisor(*AUTO[:3], "disagg", *AUTO[4:], "--json")
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    assert row["serve"] == "disaggregated" and row["verdict"]["winner"] == "aggregated"
    assert [c["role"] for c in row["commands"]] == ["prefill", "decode", "router"]
    d = row["verdict"]["disaggregated"]
    assert row["score"] == pytest.approx(d["total_tok_s"], rel=1e-12)


def test_rank_default_mode_is_unchanged(advisor: Any) -> None:
    plain = advisor("rank", MINIMAX, "--json")
    agg = advisor("rank", MINIMAX, "--mode", "agg", "--json")
    assert plain.code == agg.code == 0 and plain.out == agg.out
    assert "verdict" not in json.loads(plain.out)[0]


def test_predict_a_disaggregated_plan_is_predict_disagg(advisor: Any) -> None:
    r = advisor("predict", MINIMAX, *POOLS, "--concurrency", "16", "--input-len", "8192", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    hw = load_profile("rtx-pro-6000-server")
    plan = make_disagg(catalog_arch(MINIMAX), hw, Plan(tp=2, dp=2, ep=4), 1, Plan(tp=2, dp=2, ep=4), 1,
                       Settings(max_model_len=32768))
    want = predict_disagg(plan, terms_for(hw, "vllm")[0], 16, 8192, 1024)
    got = doc["prediction"]
    assert got["ttft_ms"] == pytest.approx(want.ttft_ms, rel=1e-9)
    assert got["tpot_ms"] == pytest.approx(want.tpot_ms, rel=1e-9)
    assert sum(got["ttft_parts_ms"].values()) == pytest.approx(got["ttft_ms"], rel=1e-9)
    assert doc["why"][0].startswith("transfer: one 8,192-token prompt's KV is")
    assert [c["role"] for c in doc["commands"]] == ["prefill", "decode", "router"]
    r = advisor("predict", MINIMAX, *POOLS, "--concurrency", "16", "--input-len", "8192", columns=200)
    assert r.code == 0 and "TTFT: request" in r.out and "vllm-router --vllm-pd-disaggregation" in r.out


def test_a_deployment_beyond_the_budget_is_refused_with_its_reason(advisor: Any) -> None:
    r = advisor("predict", MINIMAX, "--prefill-tp", "4", "--prefill-workers", "2", "--decode-tp", "4", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["prediction"]["refused"] == "needs 12 GPUs (2 x 4 prefill + 1 x 4 decode), the budget is 8"
    assert doc["prediction"]["ttft_ms"] is None and doc["commands"] == []


@pytest.mark.parametrize(("args", "message"), [
    (("predict", MINIMAX, "--prefill-tp", "2", "--prefill-workers", "0", "--decode-tp", "2"),
     "0 prefill and 1 decode workers: a disaggregated deployment needs at least one of each"),
    (("predict", MINIMAX, "--prefill-tp", "2"), "--decode-*: a disaggregated plan needs both pools"),
    (("predict", MINIMAX, "--tp", "2", "--prefill-tp", "2", "--decode-tp", "2"), "describe one aggregated plan"),
    (("predict", MINIMAX, "--prefill-tp", "4", "--decode-tp", "4", "--engine", "trtllm", "--kv-backend", "mooncake"),
     "KV transfer backend 'mooncake': trtllm offers default, ucx, nixl, mpi"),
    (("predict", MINIMAX, "--kv-backend", "nixl"), "--kv-backend: needs a disaggregated plan"),
    (("rank", MINIMAX, "--mode", "disagg"), "--mode disagg: needs --max-tpot-ms and/or --max-ttft-ms"),
    (("rank", MINIMAX, "--mode", "both", "--max-tpot-ms", "30"), "--mode: 'both' is not agg, disagg, auto"),
    (("rank", MINIMAX, "--mode", "auto", "--max-tpot-ms", "30", "--csv"), "--csv: not with --mode auto"),
    (("pareto", MINIMAX, "--mode", "x"), "--mode: 'x' is not agg, disagg, auto"),
])
def test_bad_input_is_one_line(advisor: Any, args: tuple[str, ...], message: str) -> None:
    r = advisor(*args)
    assert r.code == 2 and r.out == "", r.out
    assert r.err.count("\n") == 1 and message in r.err and "Traceback" not in r.err


def test_pareto_draws_both_frontiers(advisor: Any, tmp_path: Any) -> None:
    out = tmp_path / "both.png"
    r = advisor("pareto", MINIMAX, "--mode", "auto", "--input-len", "8192", "--max-tpot-ms", "30", "-o", str(out),
                "--frontier-only", "--json")
    assert r.code == 0, r.err
    pts = json.loads(r.out)
    assert out.stat().st_size > 10_000
    for mode in ("agg", "disagg"):
        mine = [p for p in pts if p["mode"] == mode]
        assert mine and all(p["frontier"] for p in mine)
        (op,) = [p for p in mine if p["operating"]]
        assert op["meets"] and op["tpot_ms"] <= 30
        assert op["output_tok_s_per_gpu"] == max(p["output_tok_s_per_gpu"] for p in mine if p["meets"])
    dis = [p for p in pts if p["mode"] == "disagg"]
    import numpy as np

    assert front_mask(np.array([p["per_user_tok_s"] for p in dis]),
                      np.array([p["output_tok_s_per_gpu"] for p in dis])).all()  # none dominates another
    assert all(" x " in p["plan"] and p["concurrency"] >= 1 for p in dis)


def test_a_budget_no_pairing_fits_answers_aggregated(advisor: Any) -> None:
    """On 5 of the box's GPUs no prefill worker fits beside a decode worker of MiniMax-M2.5 (each needs 3+): the
    aggregated plan is the answer and the headline says why."""
    r = advisor("rank", MINIMAX, "--mode", "auto", "--gpus", "5", "--input-len", "8192", "--max-tpot-ms", "30",
                "--json")
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    assert row["serve"] == "aggregated" and row["verdict"]["disaggregated"] is None
    assert row["why"][0].endswith("within TPOT <= 30 ms; no disaggregated deployment fits 5 GPUs")
