"""The MoE all-to-all as an engine setting (`Settings.moe_a2a_backend`): DeepEP inside one node or one NVL72 rack
when the user (or a measured run's recipe) asks for it, timed by the wide-EP model, printed in the command, refused
where DeepEP cannot run."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.cost.engine_args import resolve
from advisor.cost.plan import Plan
from advisor.cost.step import comm_fn
from advisor.cost.sweep import make_case
from advisor.cost.workload import Settings
from advisor.decide.command import Serving, serve_command
from advisor.hardware import load_profile
from advisor.hardware.cluster import load_cluster
from advisor.hardware.collective_time import collective_time_us
from advisor.hardware.wide_ep import MoEShape

DSV3 = "deepseek-ai/DeepSeek-V3"  # hidden 7168, top-8 of 256 experts


@pytest.fixture(scope="module")
def v3():  # type: ignore[no-untyped-def]
    from advisor.resolve import resolve as resolve_model

    return resolve_model(DSV3).arch


def test_deepep_inside_one_node_is_the_wide_ep_model(v3) -> None:  # type: ignore[no-untyped-def]
    """DEP8 on one B200 node: by default SGLang gathers every rank's tokens (all-gather / reduce-scatter); asked for
    DeepEP, each rank sends its tokens' top-8 copies (FP8 with a scale per 128 elements) as DeepEP's low-latency
    all-to-all over the node's NVLink, the time `collective_time_us` gives on that one node."""
    hw, plan = load_profile("b200-sxm"), Plan(tp=1, dp=8, ep=8)
    plain = make_case(v3, plan, hw, Settings(engine="sglang"))
    deep = make_case(v3, plan, hw, Settings(engine="sglang", moe_a2a_backend="deepep"))
    assert [c.cause for c in plain.collectives if "MoE" in c.cause] == ["MoE dispatch", "MoE combine"]
    got = {c.cause: c for c in deep.collectives if "MoE" in c.cause}
    assert set(got) == {"MoE dispatch (DeepEP all-to-all)", "MoE combine (DeepEP all-to-all)"}
    assert got["MoE dispatch (DeepEP all-to-all)"].bytes_per_unit == pytest.approx(8 * 7168 * (1 + 4 / 128))
    assert got["MoE combine (DeepEP all-to-all)"].bytes_per_unit == 8 * 7168 * 2
    T = np.array([64.0])
    S = T * 8 * 7168 * (1 + 4 / 128)
    one = load_cluster(hw)
    want = collective_time_us(one, "dispatch", S, one.span_of(8), "sglang", "deepep", moe=MoEShape(7168, 8, 256))
    assert comm_fn(hw, "sglang")("dispatch", S, 8, 1, "deepep", (7168, 8, 256)) == pytest.approx(want * 1e-6)
    # 64 tokens a rank: DeepEP's top-8 copies cost less than gathering all 8 ranks' tokens and scattering back
    gather = comm_fn(hw, "sglang")("allgather", 8 * T * 7168 * 2.0, 8) + \
        comm_fn(hw, "sglang")("reducescatter", 8 * T * 7168 * 2.0, 8)
    both = comm_fn(hw, "sglang")("dispatch", S, 8, 1, "deepep", (7168, 8, 256)) + \
        comm_fn(hw, "sglang")("combine", T * 8 * 7168 * 2.0, 8, 1, "deepep", (7168, 8, 256))
    assert both < gather


def test_printed_and_refused_where_deepep_cannot_run(v3) -> None:  # type: ignore[no-untyped-def]
    hw, plan = load_profile("b200-sxm"), Plan(tp=1, dp=8, ep=8)
    serving = Serving(model=DSV3, plan=plan, checkpoint_dtype="fp8", remote_code=False, moe=True)
    sg = serve_command(serving, hw, resolve(Settings(engine="sglang", moe_a2a_backend="deepep"), v3, plan, hw))
    assert sg.command.count("--moe-a2a-backend deepep --deepep-mode auto") == 1
    vl = serve_command(serving, hw, resolve(Settings(engine="vllm", moe_a2a_backend="deepep"), v3, plan, hw))
    assert "--all2all-backend deepep_low_latency" in vl.command
    assert "--moe-a2a-backend" not in serve_command(serving, hw, resolve(Settings(engine="sglang"), v3, plan,
                                                                         hw)).command
    # EP over 4 nodes: the multi-node launcher adds DeepEP once, whether or not the user asked for it
    wide, h100 = Plan(tp=1, dp=32, ep=32), load_profile("h100-sxm")
    cmd = serve_command(Serving(model=DSV3, plan=wide, checkpoint_dtype="fp8", remote_code=False, moe=True), h100,
                        resolve(Settings(engine="sglang", moe_a2a_backend="deepep"), v3, wide, h100),
                        cluster=load_cluster(h100, 4)).command
    assert cmd.count("--moe-a2a-backend") == 4  # one per node's line
    # a PCIe box: DeepEP needs NVLink between a node's GPUs, the plan is refused with that reason
    box = make_case(v3, Plan(tp=1, dp=8, ep=8), load_profile("rtx-pro-6000-server"),
                    Settings(engine="sglang", moe_a2a_backend="deepep"))
    assert not box.runs and box.reason is not None and "needs NVLink" in box.reason
    with pytest.raises(ValueError, match="TensorRT-LLM picks its own"):
        Settings(engine="trtllm", moe_a2a_backend="deepep")


def test_the_flag_on_the_command_line(advisor) -> None:  # type: ignore[no-untyped-def]
    """`--moe-a2a deepep` reaches the engine settings and the collectives; TensorRT-LLM and an unknown value get
    one line and exit 2."""
    import json

    from conftest import assert_one_line

    flags = ("--hw", "b200-sxm", "--engine", "sglang", "--tp", "1", "--dp", "8", "--ep", "8", "--json")
    r = advisor("predict", DSV3, *flags, "--moe-a2a", "deepep")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["engine_args"]["moe_a2a_backend"] == "deepep"
    assert "DeepEP" in json.dumps(d["collectives"])
    plain = json.loads(advisor("predict", DSV3, *flags).out)
    assert plain["engine_args"]["moe_a2a_backend"] == "default" and "DeepEP" not in json.dumps(plain["collectives"])
    assert_one_line(advisor("predict", DSV3, "--engine", "trtllm", "--moe-a2a", "deepep"), "--moe-a2a deepep",
                    "TensorRT-LLM")
    assert_one_line(advisor("rank", DSV3, "--moe-a2a", "nccl"), "--moe-a2a nccl", "default, deepep or auto")


def test_rank_on_a_rack_names_deepep_in_its_why_line(advisor) -> None:  # type: ignore[no-untyped-def]
    """The why-line splits the step's collectives by link: with DeepEP inside the rack, its all-to-all is timed per
    MoE shape there too (a one-domain expert exchange is not a plain NCCL call)."""
    r = advisor("rank", "deepseek-ai/DeepSeek-R1", "--hw", "gb200", "--nodes", "4", "--engine", "sglang",
                "--moe-a2a", "deepep", "--concurrency", "256")
    assert r.code == 0, r.err
    assert "(DeepEP all-to-all)" in r.out and "--moe-a2a-backend deepep" in r.out


def test_two_batch_overlap_only_with_deepep(advisor) -> None:  # type: ignore[no-untyped-def]
    """`--two-batch-overlap` (SGLang's `--enable-two-batch-overlap`) needs DeepEP's exchange, as SGLang refuses it
    with `--moe-a2a-backend none`: DEP8 on one node is refused with that reason unless `--moe-a2a deepep`, and then
    runs with the flag printed; another engine gets one line and exit 2."""
    import json

    from conftest import assert_one_line

    flags = ("--hw", "b200-sxm", "--engine", "sglang", "--tp", "1", "--dp", "8", "--ep", "8", "--concurrency", "64")
    refused = json.loads(advisor("predict", DSV3, *flags, "--two-batch-overlap", "--json").out)
    assert refused["tpot_ms"] is None and "two-batch overlap needs DeepEP" in refused["reason"]
    on = advisor("predict", DSV3, *flags, "--two-batch-overlap", "--moe-a2a", "deepep", "--json")
    d = json.loads(on.out)
    assert on.code == 0 and d["tpot_ms"] > 0 and d["engine_args"]["two_batch_overlap"] is True
    off = json.loads(advisor("predict", DSV3, *flags, "--moe-a2a", "deepep", "--json").out)
    assert off["engine_args"]["two_batch_overlap"] is False and d["tpot_ms"] != off["tpot_ms"]
    assert_one_line(advisor("predict", DSV3, "--engine", "vllm", "--two-batch-overlap"), "--two-batch-overlap",
                    "SGLang")


def test_rank_auto_takes_the_better_exchange(advisor) -> None:  # type: ignore[no-untyped-def]
    """`rank --moe-a2a auto` ranks each model with the default exchange and with DeepEP and keeps the better row (by
    the query's own score): on four GB200 trays DeepSeek-R1's best score is the larger of the two rankings', and
    its command says which exchange it is; predict refuses auto in one line."""
    import json

    from conftest import assert_one_line

    flags = ("rank", "deepseek-ai/DeepSeek-R1", "--hw", "gb200", "--nodes", "4", "--engine", "sglang",
             "--concurrency", "256", "--json")
    rows = {a2a: json.loads(advisor(*flags, "--moe-a2a", a2a).out)[0] for a2a in ("default", "deepep", "auto")}
    best = max(("default", "deepep"), key=lambda a: rows[a]["score"])
    assert rows["auto"]["score"] == rows[best]["score"] and rows["auto"]["plan"] == rows[best]["plan"]
    assert rows["auto"]["engine_args"]["moe_a2a_backend"] == rows[best]["engine_args"]["moe_a2a_backend"]
    assert_one_line(advisor("predict", DSV3, "--engine", "sglang", "--moe-a2a", "auto"), "--moe-a2a auto",
                    "only rank")
