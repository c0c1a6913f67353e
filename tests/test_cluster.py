"""Clusters (advisor/hardware/cluster.py), plans that span nodes (cost/plan.py), the collectives of a step on a
cluster (cost/collectives.py) and their fabric time (cost/cluster_comm.py): real profiles, values by hand."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
from conftest import catalog_arch

from advisor.cost.collectives import Collective, deepep_exchange, step_collectives
from advisor.cost.plan import Plan, candidate_plans, cluster_reason, rank_layout
from advisor.cost.step import comm_fn
from advisor.cost.sweep import all_cases, make_case
from advisor.cost.workload import Settings
from advisor.errors import AdvisorError
from advisor.hardware import load_profile
from advisor.hardware.cluster import Cluster, Span, load_cluster
from advisor.hardware.collective_time import collective_time_us
from advisor.hardware.dump import profile_to_toml
from advisor.hardware.load import parse_profile
from advisor.hardware.schema import HardwareProfile
from advisor.hardware.wide_ep import MoEShape

KIMI = "moonshotai/Kimi-K2.5"  # hidden 7168, top-8 of 384 experts, 60 MoE layers, INT4 experts
DSV3 = "deepseek-ai/DeepSeek-V3"  # hidden 7168, 128 heads, top-8 of 256, 58 MoE layers


def cluster(hw: str, nodes: int, fabric: str | None = None) -> Cluster:
    return load_cluster(load_profile(hw), nodes, fabric)


# --- the cluster model ----------------------------------------------------------------------------------------


def test_nvl72_tray_is_a_node_and_18_share_one_nvlink_domain() -> None:
    one_rack = cluster("gb200", 18)
    assert (one_rack.gpus, one_rack.gpus_per_node, one_rack.fast_domain_gpus, one_rack.domains) == (72, 4, 72, 1)
    two_trays = cluster("gb200", 2)  # an 8-GPU slice of a rack: one NVLink domain of 8
    assert (two_trays.gpus, two_trays.fast_domain_gpus, two_trays.domains) == (8, 8, 1)
    racks = cluster("gb200", 36)  # two racks over the trays' InfiniBand
    assert (racks.gpus, racks.fast_domain_gpus, racks.domains) == (144, 72, 2)
    assert racks.fabric is not None and racks.fabric.node_gbps == 4 * 50.0  # 4x ConnectX-7 NDR per tray
    partial = cluster("gb200", 20)  # one rack and two trays of another
    assert (partial.gpus, partial.domains) == (80, 2)
    assert partial.span_of(80).per_domain == 72


def test_eight_gpu_nodes_are_their_own_fast_domain() -> None:
    c = cluster("h100-sxm", 2)
    assert (c.gpus, c.fast_domain_gpus, c.domains) == (16, 8, 2)
    assert c.fabric is not None and c.fabric.id == "ndr-8x400" and c.fabric.node_gbps == 400.0  # 8 x 400 Gb/s
    b300 = cluster("b300-sxm", 2).fabric
    assert b300 is not None and b300.node_gbps == 800.0  # 8 x ConnectX-8 800 Gb/s
    box = cluster("rtx-pro-6000-server", 2)
    assert box.fabric is not None and box.fabric.id == "cx7-2x400-host" and not box.fabric.gpudirect_rdma
    other = cluster("rtx-pro-6000-server", 2, "cx8-4x800")
    assert other.fabric is not None and other.fabric.gpudirect_rdma and other.fabric.node_gbps == 400.0


def test_span_of_a_group_counts_nodes_and_fast_domains() -> None:
    c = cluster("rtx-pro-6000-server", 2)
    s = c.span_of(16)
    assert (s.gpus, s.nodes, s.domains, s.per_domain) == (16, 2, 2, 8)
    strided = c.span([0, 1, 2, 3, 8, 9, 10, 11])  # vLLM's EP group of TP4 x PP2 x DP2, stage 0
    assert (strided.nodes, strided.domains, strided.per_domain) == (2, 2, 4)
    assert c.span_of(8).domains == 1 and not c.span_of(8).crosses_fabric
    rack = cluster("gb200", 18)
    assert (rack.span_of(72).nodes, rack.span_of(72).domains) == (18, 1)
    with pytest.raises(AdvisorError, match="outside the cluster's 16 GPUs"):
        c.span([15, 16])


def test_every_shipped_fabric_and_rack_has_sources() -> None:
    for hid in ("h100-sxm", "h200-sxm", "b200-sxm", "b300-sxm", "gb200", "gb300", "rtx-pro-6000-server"):
        hw = load_profile(hid)
        assert hw.fabrics, hid
        for f in hw.fabrics:
            assert "http" in f.source and f.latency_us == 2.7 and "tuning.cc" in f.source, (hid, f.id)
    for hid in ("gb200", "gb300"):
        topo = load_profile(hid).topology
        assert topo.rack_nodes == 18 and topo.rack_nodes * topo.num_gpus == topo.nvlink_domain_size == 72
        assert topo.rack_nodes_source and "https://docs.nvidia.com" in topo.rack_nodes_source


def _without_fabrics(tmp_path: Path, hid: str) -> HardwareProfile:
    data = tomllib.loads(profile_to_toml(load_profile(hid)))
    data["fabrics"] = []
    data["id"] = f"{hid}-nofabric"
    path = tmp_path / f"{hid}-nofabric.toml"
    import tomli_w

    path.write_text(tomli_w.dumps(data))
    return parse_profile(path)


def test_bad_cluster_input_is_one_line(tmp_path: Path) -> None:
    hw = load_profile("rtx-pro-6000-server")
    with pytest.raises(AdvisorError, match=r"^--nodes 0: a cluster has at least 1 node$"):
        load_cluster(hw, 0)
    with pytest.raises(AdvisorError, match="--fabric ib: rtx-pro-6000-server lists cx7-2x400-host, cx8-4x800"):
        load_cluster(hw, 2, "ib")
    with pytest.raises(AdvisorError, match="l40s lists no scale-out fabric"):
        load_cluster(load_profile("l40s"), 2)
    rack = _without_fabrics(tmp_path, "gb200")
    assert load_cluster(rack, 18).gpus == 72  # one whole rack needs no fabric
    with pytest.raises(AdvisorError, match=r"--nodes 19: one gb200-nofabric NVLink domain holds 18 nodes \(72 GPUs\)"):
        load_cluster(rack, 19)
    with pytest.raises(AdvisorError, match="the advisor plans up to 1024"):
        load_cluster(hw, 200)


def test_rack_nodes_must_match_the_nvlink_domain(tmp_path: Path) -> None:
    text = profile_to_toml(load_profile("gb200")).replace("rack_nodes = 18", "rack_nodes = 16")
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(AdvisorError, match="rack_nodes: 16 nodes x 4 GPUs is not the NVLink domain's 72"):
        parse_profile(path)


# --- plans that span nodes -------------------------------------------------------------------------------------


def test_rank_layout_follows_each_engine() -> None:
    p = Plan(tp=4, pp=2, dp=2)
    vllm = rank_layout(p, "vllm")  # DP x PP x TP: one replica's two stages on GPUs 0-7
    assert vllm[0, 1].tolist() == [4, 5, 6, 7] and vllm[1, 0].tolist() == [8, 9, 10, 11]
    sglang = rank_layout(p, "sglang")  # PP outside TP x attention-DP: stage 0 of both DP ranks on GPUs 0-7
    assert sglang[1, 0].tolist() == [4, 5, 6, 7] and sglang[0, 1].tolist() == [8, 9, 10, 11]


def test_tp_crosses_nics_only_over_whole_nvlink_domains() -> None:
    c = cluster("h100-sxm", 2)
    assert cluster_reason(Plan(tp=16), c) is None  # two whole NVLink nodes over the fabric: costed
    # TP6 x DP2: the second replica's TP group would straddle GPUs 6-11, across the two nodes
    straddle = cluster_reason(Plan(tp=6, dp=2), c)
    assert straddle is not None and "TP6 would cross" in straddle and "straddles a domain unevenly" in straddle
    pcie = cluster_reason(Plan(tp=16), cluster("rtx-pro-6000-server", 2))
    assert pcie is not None and "a node holds 8 GPUs on PCIe" in pcie and "nodes without NVLink" in pcie
    assert cluster_reason(Plan(tp=8, pp=2), c) is None
    assert cluster_reason(Plan(tp=1, dp=16, ep=16), c) is None
    assert cluster_reason(Plan(tp=8, pp=4), c) == "needs 32 GPUs (TP8 x PP4 x DP1), the cluster has 16 (2 x 8)"
    # an NVL72 rack: TP8 over two trays stays on NVLink
    assert cluster_reason(Plan(tp=8), cluster("gb200", 2)) is None
    assert cluster_reason(Plan(tp=8, pp=2), cluster("gb200", 36)) is None


def test_candidate_plans_on_a_cluster() -> None:
    c = cluster("h100-sxm", 9)  # SGLang's decode deployment: EP72 over nine 8-GPU nodes
    plans = set(candidate_plans(catalog_arch(DSV3), 72, c))
    assert Plan(tp=1, dp=72, ep=72) in plans and Plan(tp=8, pp=9) in plans
    assert all((p.tp <= 8 or p.tp in (16, 32, 64)) and p.gpus <= 72 for p in plans)
    assert Plan(tp=16, pp=4) in plans and Plan(tp=64) in plans  # TP over whole nodes, powers of two
    pcie = set(candidate_plans(catalog_arch(DSV3), 16, cluster("rtx-pro-6000-server", 2)))
    assert max(p.tp for p in pcie) == 8
    rack = set(candidate_plans(catalog_arch(DSV3), 72, cluster("gb200", 18)))
    assert Plan(tp=1, dp=72, ep=72) in rack and Plan(tp=16, dp=4, ep=64) in rack  # TP up to the 72-GPU domain


def test_experts_are_sharded_over_ep_across_nodes() -> None:
    a, hw = catalog_arch(DSV3), load_profile("h100-sxm")
    c = cluster("h100-sxm", 2)
    wide = make_case(a, Plan(tp=1, dp=16, ep=16), hw, Settings(), cluster=c)
    one = make_case(a, Plan(tp=8, ep=8), hw, Settings())
    assert wide.memory is not None and one.memory is not None
    experts = next(w for w in wide.weights if w.shard == "expert").bytes
    # EP16 holds 1/16 of the experts per GPU where EP8 holds 1/8; the attention is whole on every DP rank (TP1)
    assert one.memory.weights_bytes - wide.memory.weights_bytes < experts / 8 - experts / 16


# --- the collectives of a step on a cluster --------------------------------------------------------------------


def _by_slot(colls: tuple[Collective, ...]) -> dict[str, Collective]:
    return {c.slot.name: c for c in colls}


def test_wide_ep_over_rdma_is_deepep_all_to_all() -> None:
    a, c = catalog_arch(KIMI), cluster("h100-sxm", 2)
    got = _by_slot(step_collectives(a, Plan(tp=1, dp=16, ep=16), None, c, "vllm"))
    d, cb = got["a2a_dispatch"], got["a2a_combine"]
    # top-8 copies of a 7168-wide token: FP8 with a scale per 128 elements, then BF16 back
    assert d.bytes_per_unit == pytest.approx(8 * 7168 * (1 + 4 / 128)) and d.bytes_per_unit == 59136
    assert cb.bytes_per_unit == 8 * 7168 * 2
    assert (d.group, d.domains, d.calls) == (16, 2, 60)
    assert "moe_dispatch" not in got
    assert deepep_exchange(Plan(tp=1, dp=16, ep=16), c)


def test_trtllm_nvlink_all_to_all_moves_the_experts_input_format() -> None:
    """TensorRT-LLM's attention-DP EP16 over four GB200 trays runs its NVLink all-to-all, which moves the MoE input as
    the experts' recipe quantizes it (tech blog 18: NVFP4 4032 bytes per 7168-wide token; block FP8 with a float scale
    per 128), top-8 copies out and BF16 back."""
    rack = load_cluster(load_profile("gb200"), 4)
    plan = Plan(tp=1, dp=16, ep=16)
    fp4 = _by_slot(step_collectives(catalog_arch("nvidia/DeepSeek-R1-NVFP4"), plan, None, rack, "trtllm"))
    fp8 = _by_slot(step_collectives(catalog_arch("deepseek-ai/DeepSeek-R1"), plan, None, rack, "trtllm"))
    assert fp4["a2a_dispatch"].bytes_per_unit == 8 * 4032
    assert fp8["a2a_dispatch"].bytes_per_unit == pytest.approx(8 * 7168 * (1 + 4 / 128))
    assert fp4["a2a_combine"].bytes_per_unit == fp8["a2a_combine"].bytes_per_unit == 8 * 7168 * 2
    assert "NVLink all-to-all" in fp4["a2a_dispatch"].cause and fp4["a2a_dispatch"].group == 16


def test_wide_ep_without_gpudirect_rdma_stays_on_nccl() -> None:
    a, c = catalog_arch(KIMI), cluster("rtx-pro-6000-server", 2)  # host-staged NICs: DeepEP cannot run
    got = _by_slot(step_collectives(a, Plan(tp=1, dp=16, ep=16), None, c, "vllm"))
    assert "a2a_dispatch" not in got and not deepep_exchange(Plan(tp=1, dp=16, ep=16), c)
    assert (got["moe_dispatch"].op, got["moe_dispatch"].domains) == ("allgather", 2)
    # GPUDirect RDMA but no NVLink inside the box: DeepEP still cannot run (its intranode path is NVLink)
    assert not deepep_exchange(Plan(tp=1, dp=16, ep=16), cluster("rtx-pro-6000-server", 2, "cx8-4x800"))


def test_pp_sends_between_nodes_are_their_own_slot() -> None:
    a, c = catalog_arch(KIMI), cluster("rtx-pro-6000-server", 2)
    got = _by_slot(step_collectives(a, Plan(tp=8, pp=2), None, c, "vllm"))
    net = got["pp_send_net"]
    assert (net.calls, net.domains, net.bytes_per_unit) == (1, 2, 7168 * 2)
    assert "pp_send" not in got  # no send stays inside a node
    assert got["tp_hidden"].domains == 1
    # vLLM: TP4 x PP2 x DP2 keeps each replica's stages in one node, so its EP group crosses; SGLang the reverse
    v = _by_slot(step_collectives(a, Plan(tp=4, pp=2, dp=2, ep=8), None, c, "vllm"))
    s = _by_slot(step_collectives(a, Plan(tp=4, pp=2, dp=2, ep=8), None, c, "sglang"))
    assert v["moe_dispatch"].domains == 2 and "pp_send_net" not in v
    assert s["moe_dispatch"].domains == 1 and s["pp_send_net"].calls == 1


def test_one_node_collectives_are_unchanged() -> None:
    a, hw = catalog_arch(KIMI), load_profile("rtx-pro-6000-server")
    for plan in (Plan(tp=8), Plan(tp=4, dp=2, ep=8), Plan(tp=4, pp=2)):
        assert step_collectives(a, plan) == step_collectives(a, plan, None, load_cluster(hw, 1))
        assert all(c.domains == 1 for c in step_collectives(a, plan))
    d, h200 = catalog_arch(DSV3), load_profile("h200-sxm")
    single = make_case(d, Plan(tp=8), h200, Settings())
    also = make_case(d, Plan(tp=8), h200, Settings(), cluster=load_cluster(h200, 1))
    assert np.array_equal(single.features(), also.features()) and also.cluster is None


def test_cluster_comm_is_the_node_inside_it_and_the_scaleout_model_across() -> None:
    S = np.array([2.0**14, 2.0**20, 2.0**24])
    hw = load_profile("h100-sxm")
    c = load_cluster(hw, 2)
    node, comm = comm_fn(hw, "vllm"), comm_fn(hw, "vllm", c)
    assert np.array_equal(comm("allreduce", S, 8), node("allreduce", S, 8))  # inside a node: exactly one box's
    span = Span(gpus=16, nodes=2, domains=2, per_domain=8)
    assert comm("allreduce", S, 16, 2) == pytest.approx(collective_time_us(c, "allreduce", S, span) * 1e-6)
    pp = Span(gpus=2, nodes=2, domains=2, per_domain=1)
    assert comm("p2p", S, 2, 2) == pytest.approx(collective_time_us(c, "p2p", S, pp) * 1e-6)
    # DeepEP dispatch across the nodes, as vLLM's printed --all2all-backend deepep_low_latency runs it
    got = comm("dispatch", S, 16, 2, "deepep", (7168, 8, 256))
    want = collective_time_us(c, "dispatch", S, span, "vllm", "deepep_low_latency", moe=MoEShape(7168, 8, 256))
    assert got == pytest.approx(want * 1e-6) and np.all(np.diff(got) > 0)
    # a 2-tray group inside an NVL72 rack never touches a NIC: the scale-out model's in-domain time
    rack = load_cluster(load_profile("gb200"), 18)
    in_rack = comm_fn(rack.node, "vllm", rack)("allreduce", S, 8)
    assert in_rack == pytest.approx(collective_time_us(rack, "allreduce", S, 8) * 1e-6)


def test_cluster_sweep_runs_the_wide_ep_plan() -> None:
    a, hw = catalog_arch(DSV3), load_profile("h100-sxm")
    cases = all_cases(a, hw, Settings(engine="sglang"), cluster=cluster("h100-sxm", 2))
    runs = {c.plan for c in cases if c.runs}
    assert Plan(tp=8, pp=2) in runs and Plan(tp=8, dp=2, ep=16) in runs
    assert Plan(tp=16) in runs and all(c.plan.tp in (*range(1, 9), 16) for c in cases)


def test_tp16_over_two_nodes_times_its_allreduces_across_the_fabric() -> None:
    """TP16 on two 8x H100 nodes: every TP collective spans the 2 fast domains and is timed by the scale-out model
    (two-level allreduce: reduce-scatter inside the node, the 1/8 shard over the NICs, all-gather back) at 8 GPUs a
    domain; the step's collectives cost more than TP8 x PP2's on the same GPUs."""
    a, c = catalog_arch(DSV3), cluster("h100-sxm", 2)
    tp16 = make_case(a, Plan(tp=16), c.node, Settings(engine="sglang"), cluster=c)
    assert tp16.runs, tp16.reason
    tps = [x for x in tp16.collectives if x.slot.op in ("allreduce", "allgather")]
    assert tps and all(x.group == 16 and x.domains == 2 for x in tps)
    comm = comm_fn(c.node, "sglang", c)
    S = np.array([32 * 7168 * 2.0])
    assert comm("allreduce", S, 16, 2) == pytest.approx(
        collective_time_us(c, "allreduce", S, Span(16, 2, 2, 8), "sglang") * 1e-6)
    assert comm("allreduce", S, 16, 2) > 3 * comm("allreduce", S, 8)  # the NIC hop dominates the in-node ring


def test_copies_never_outnumber_the_users() -> None:
    """Three users on eight nodes keep three copies of a one-node plan busy, one user each: the total is three
    times one copy's speed at one user, not eight copies'."""
    from advisor.cost.terms import Terms
    from advisor.decide.nodes import _copies

    c = cluster("b200-sxm", 8)
    case = make_case(catalog_arch(DSV3), Plan(tp=8), c.node, Settings(engine="sglang"))
    assert case.runs, case.reason
    r, tok = _copies(case, c, Terms(), 3, 1024, 1024)
    r1, tok1 = _copies(case, c, Terms(), 1, 1024, 1024)
    assert (r, r1) == (3, 1) and tok == pytest.approx(3 * tok1, rel=1e-9)
