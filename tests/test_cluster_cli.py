"""--nodes/--fabric on rank, predict, fit, pareto and hw show: the answers and commands on a cluster, the one-box
owner's question (a second RTX PRO 6000 server over its network), and bad input (one line, exit 2, or a refused
plan with its reason). Runs the CLI in-process (conftest `advisor`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tomli_w
from conftest import Run, assert_one_line, catalog_arch

from advisor.calibrate.store import terms_for
from advisor.cost.plan import Plan
from advisor.cost.sweep import all_cases, evaluate, make_case
from advisor.cost.workload import Settings
from advisor.decide.command import Serving, serve_command
from advisor.decide.nodes import scale_out
from advisor.hardware import load_profile
from advisor.hardware.cluster import load_cluster
from advisor.hardware.dump import profile_to_toml

KIMI, MINIMAX, DSV3 = "moonshotai/Kimi-K2.5", "MiniMaxAI/MiniMax-M2.5", "deepseek-ai/DeepSeek-V3"
Advisor = Callable[..., Run]


def rows(r: Run) -> list[dict]:
    assert r.code == 0, r.err
    return [d for d in json.loads(r.out) if d.get("plan")]


# --- bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,words", [
    (("predict", MINIMAX, "--nodes", "0"), ("--nodes 0", "at least 1 node")),
    (("rank", MINIMAX, "--nodes", "2", "--fabric", "ib"), ("--fabric ib", "cx7-2x400-host, cx8-4x800")),
    (("fit", MINIMAX, "--fabric", "ib"), ("--fabric ib",)),
    (("pareto", MINIMAX, "--hw", "l40s", "--nodes", "2"), ("l40s lists no scale-out fabric",)),
    (("predict", MINIMAX, "--nodes", "2", "--gpus", "4"), ("--gpus/--nodes",)),
    (("hw", "show", "h100-sxm", "--nodes", "2", "--fabric", "roce"), ("--fabric roce", "ndr-8x400")),
])
def test_bad_cluster_flags_are_one_line(advisor: Advisor, args: tuple[str, ...], words: tuple[str, ...]) -> None:
    assert_one_line(advisor(*args), *words)


def test_more_nodes_than_a_rack_without_a_fabric(advisor: Advisor, tmp_path: Path) -> None:
    import tomllib

    data = tomllib.loads(profile_to_toml(load_profile("gb200")))
    data.update(id="rack-only", fabrics=[])
    path = tmp_path / "rack-only.toml"
    path.write_text(tomli_w.dumps(data))
    assert advisor("hw", "show", str(path), "--nodes", "18").code == 0
    assert_one_line(advisor("hw", "show", str(path), "--nodes", "19"), "--nodes 19",
                    "one rack-only NVLink domain holds 18 nodes (72 GPUs)", "no scale-out fabric")


def test_tp_across_the_nics_is_a_refused_plan(advisor: Advisor) -> None:
    r = advisor("predict", MINIMAX, "--nodes", "2", "--tp", "16", "--json")
    d = json.loads(r.out)
    assert r.code == 0 and not d["fits"] and d["tpot_ms"] is None
    assert d["reason"].startswith("TP16 would cross the NICs between nodes (a node holds 8 GPUs on PCIe)")
    too_big = json.loads(advisor("predict", MINIMAX, "--nodes", "2", "--tp", "8", "--pp", "4", "--json").out)
    assert too_big["reason"] == "needs 32 GPUs (TP8 x PP4 x DP1), the cluster has 16 (2 x 8)"


# --- answers on a cluster ---------------------------------------------------------------------------------------


def test_hw_show_lists_the_cluster_links(advisor: Advisor) -> None:
    d = json.loads(advisor("hw", "show", "rtx-pro-6000-server", "--nodes", "2", "--json").out)
    c = d["cluster"]
    assert (c["nodes"], c["gpus"], c["fast_domain_gpus"], c["fabric"]) == (2, 16, 8, "cx7-2x400-host")
    fabric = c["links"][-1]
    assert fabric["gbps_per_gpu"] == 2 * 50 / 8 and fabric["latency_us"] == 2.7  # two 400 Gb/s NICs for 8 GPUs
    assert "host memory" in fabric["source"]
    rack = json.loads(advisor("hw", "show", "gb200", "--nodes", "36", "--json").out)["cluster"]
    assert [lk["gpus"] for lk in rack["links"]] == [4, 72, 144]  # a tray, the NVLink rack, two racks over NDR
    assert "cluster" not in json.loads(advisor("hw", "show", "gb200", "--json").out)


def test_predict_on_two_nodes_defaults_to_tp_per_node_pp_over_nodes(advisor: Advisor) -> None:
    d = json.loads(advisor("predict", DSV3, "--hw", "h100-sxm", "--nodes", "2", "--json").out)
    assert d["plan"]["label"] == "TP8+PP2" and d["fits"], d["reason"]
    assert d["cluster"] == {"nodes": 2, "gpus_per_node": 8, "gpus": 16, "fast_domain_gpus": 8,
                            "fabric": "ndr-8x400", "fabric_name": "8x ConnectX-7 400 Gb/s InfiniBand NDR",
                            "plan_nodes": 2, "replicas": 1}
    links = {c["cause"]: c["link"] for c in d["collectives"]}
    assert links["pipeline stage send between nodes"] == "8x ConnectX-7 400 Gb/s InfiniBand NDR"
    assert links["attention/mixer output projection"] == "NVLink"
    one = json.loads(advisor("predict", MINIMAX, "--json").out)
    assert "cluster" not in one and all("link" not in c for c in one["collectives"])


def test_fit_on_a_cluster_shows_the_spanning_plans(advisor: Advisor) -> None:
    r = advisor("fit", DSV3, "--hw", "h100-sxm", "--nodes", "2", "--json")
    plans = {d["plan"]["label"]: d for d in json.loads(r.out)}
    assert {"TP8+PP2", "TP1+DP16+EP16", "TP8+DP2+EP16"} <= set(plans)
    assert not plans["TP8"]["fits"] and plans["TP8+PP2"]["fits"]  # 671B in FP8 needs the second node
    assert plans["TP1+DP16+EP16"]["cluster"]["plan_nodes"] == 2


def test_pareto_on_two_nodes_has_plans_over_both(advisor: Advisor) -> None:
    pts = json.loads(advisor("pareto", MINIMAX, "--nodes", "2", "--json").out)
    assert max(p["gpus"] for p in pts) == 16 and min(p["gpus"] for p in pts) <= 8


# --- commands per node ------------------------------------------------------------------------------------------


def _command(engine: str, hw: str, nodes: int, plan: Plan, model: str = DSV3):
    profile, a = load_profile(hw), catalog_arch(model)
    c = load_cluster(profile, nodes)
    case = make_case(a, plan, profile, Settings(engine=engine), cluster=c)
    s = Serving(model=model, plan=plan, checkpoint_dtype=a.weight_dtype, remote_code=False, moe=True)
    return serve_command(s, profile, case.args, c)


def test_vllm_wide_ep_over_two_nodes_is_its_data_parallel_launcher() -> None:
    cmd = _command("vllm", "h100-sxm", 2, Plan(tp=1, dp=16, ep=16))
    head, other = (launch.argv for launch in cmd.launches)
    for argv in (head, other):
        assert argv[argv.index("--data-parallel-size") + 1] == "16"
        assert argv[argv.index("--data-parallel-size-local") + 1] == "8"
        assert argv[argv.index("--all2all-backend") + 1] == "deepep_low_latency"
        assert argv[argv.index("--data-parallel-address") + 1] == "HEAD_NODE_IP"
    assert "--headless" not in head and other[other.index("--data-parallel-start-rank") + 1] == "8"
    assert "--headless" in other and [launch.node for launch in cmd.launches] == [0, 1]
    no_rdma = _command("vllm", "rtx-pro-6000-server", 2, Plan(tp=1, dp=16, ep=16), MINIMAX)
    assert all("--all2all-backend" not in launch.argv for launch in no_rdma.launches)


def test_vllm_pp_across_nodes_uses_ray() -> None:
    cmd = _command("vllm", "h100-sxm", 2, Plan(tp=8, pp=2))
    assert [launch.role for launch in cmd.launches] == ["ray-head", "ray-worker", "server"]
    assert cmd.launches[1].argv == ("ray", "start", "--address=HEAD_NODE_IP:6379", "--block")
    serve = cmd.launches[2].argv
    assert serve[serve.index("--pipeline-parallel-size") + 1] == "2"
    assert serve[-2:] == ("--distributed-executor-backend", "ray")


def test_sglang_and_trtllm_multinode_flags() -> None:
    sg = _command("sglang", "h100-sxm", 2, Plan(tp=1, dp=16, ep=16))
    for rank, launch in enumerate(sg.launches):
        a = launch.argv
        assert a[a.index("--nnodes") + 1] == "2" and a[a.index("--node-rank") + 1] == str(rank)
        assert a[a.index("--dist-init-addr") + 1] == "HEAD_NODE_IP:5000"
        assert a[a.index("--moe-a2a-backend") + 1] == "deepep" and "--enable-dp-attention" in a
    trt = _command("trtllm", "gb200", 18, Plan(tp=1, dp=64, ep=64))
    (launch,) = trt.launches
    assert launch.argv[:9] == ("srun", "-N", "16", "--ntasks", "64", "--ntasks-per-node", "4", "--mpi=pmix",
                               "trtllm-llmapi-launch")
    assert "enable_attention_dp: true" in dict(launch.files)["extra_llm_api_options.yaml"]


def test_a_one_node_plan_on_two_nodes_is_two_servers() -> None:
    cmd = _command("vllm", "h200-sxm", 2, Plan(tp=8))
    assert [(launch.role, launch.node) for launch in cmd.launches] == [("replica", 0), ("replica", 1)]
    assert cmd.launches[0].argv == cmd.launches[1].argv and "load balancer" in cmd.notes[-1]
    # the same line twice: a shell comment before each names the node it runs on
    line = cmd.launches[0].line
    assert cmd.command.splitlines() == ["# on node 0:", line, "# on node 1:", line]


# --- the one-box owner's question -------------------------------------------------------------------------------


def test_second_box_answer_is_computed_from_its_options() -> None:
    """MiniMax-M2.5 on two RTX PRO 6000 servers: the sentence's numbers are the predictions of its options (one node,
    two copies of the one-node plan at half the users each, the best plan across both boxes)."""
    hw = load_profile("rtx-pro-6000-server")
    c = load_cluster(hw, 2)
    a, s = catalog_arch(MINIMAX), Settings()
    terms, _ = terms_for(hw, "vllm", None)
    one = [x for x in all_cases(a, hw, s) if x.runs]
    many = [x for x in all_cases(a, hw, s, cluster=c) if x.runs]
    line = scale_out(MINIMAX, one, many, c, terms, 64, 1024, 1024)
    assert line is not None and line.startswith(f"{MINIMAX} on 2 x rtx-pro-6000-server (16 GPUs)")

    def tok(cases: list, users: float) -> np.ndarray:
        sw = evaluate(cases, terms, np.array([users]), np.array([1024.0]), np.array([1024.0]))
        return sw.out["output_tok_s"][:, 0, 0]

    at64 = tok(one, 64)
    best1 = one[int(np.argmax(at64))]
    copies = 2 * float(tok([best1], 32)[0])
    assert f"one node ({best1.plan.label()}) {at64.max():,.0f} tok/s" in line
    assert f"2 copies of {best1.plan.label()} (32 users each) {copies:,.0f} tok/s" in line
    spanning = [x for x in many if x.plan.gpus > 8]
    across = tok(spanning, 64)
    assert f"{spanning[int(np.argmax(across))].plan.label()} across the nodes {across.max():,.0f} tok/s" in line
    assert "over 2x ConnectX-7 400 Gb/s, staged through host memory:" in line  # the why: the link and its share


def test_rank_two_boxes_answers_for_kimi_and_minimax(advisor: Advisor) -> None:
    r = advisor("rank", KIMI, MINIMAX, "--nodes", "2", "--objective", "throughput", "--json")
    got = {d["model"]: d for d in rows(r)}
    for model, d in got.items():
        assert d["cluster"]["nodes"] == 2 and d["cluster"]["fabric"] == "cx7-2x400-host"
        line = d["scale_out"]
        assert line.startswith(f"{model} on 2 x rtx-pro-6000-server") and "at one user" in line, line
        assert "at 64 users: one node (" in line and "2 copies of" in line and "; best " in line, line
        assert len(d["commands"]) >= 2  # a launch per node
    table = advisor("rank", KIMI, MINIMAX, "--nodes", "2", "--objective", "throughput")
    assert table.code == 0 and got[KIMI]["scale_out"].split(":")[0] in table.out.replace("\n", " ")
    one_box = rows(advisor("rank", KIMI, MINIMAX, "--objective", "throughput", "--json"))
    assert all("scale_out" not in d and "cluster" not in d for d in one_box)
