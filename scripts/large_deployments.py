"""Published large deployments predicted with the advisor's own functions, at the conditions their sources state,
and the "Racks and large deployments" block of docs/accuracy.md (with `scripts/rack_rows.py` and
`scripts/nvswitch_fit.py`).

    python -m scripts.large_deployments [--update [FILE]]   # print the block; --update writes it (docs/accuracy.md)

Each deployment is one side of a disaggregated serving system measured alone (its sources ran the other side with
room to spare): a prefill pool's input tokens per second at its per-device token batch, or a decode pool's output
tokens per second at its per-device batch and KV length, from one step of the advisor's step model
(`cost/step.py: step_time`) on the plan and nodes the source ran, under the engine's shipped calibration for the GPU.
Mechanisms, and which the advisor models:

- PD disaggregation: yes (each pool is its own plan; `cost/disagg*.py`).
- EPLB's 32 redundant experts (`--ep-num-redundant-experts 32`: 288 expert slots): the slots, yes (the MoE as 288
  experts, `arch/redundant.py`); the balance they buy is what the model assumes anyway (uniform routing,
  the busiest rank of Poisson loads, `cost/step.py: busiest_rank_pairs`); the real skew they correct is not.
- DeepEP: normal mode in prefill, low-latency in decode, as the sources' commands set (`--deepep-mode`): the plan's
  MoE exchange timed by `hardware/ep_exchange.py` in that mode (across nodes over the NICs; inside an NVL72 rack over
  NVLink). The step model has no phase for it, and inside one NVLink domain it costs SGLang's default exchange
  (all-gather/reduce-scatter), so the script hands the mode to the timer (`deepep_comm`).
- Two-batch overlap (TBO, `--enable-two-batch-overlap`): yes where the source ran it (the 96-H100 prefill and decode,
  issue 6017's commands): the setting `two_batch_overlap`, the step of two micro-batches whose dispatch/combine runs
  under the other's compute (`cost/tbo.py`). The H100 source credits it with 27-35% in prefill and 25.5% in decode
  at 256 sequences a GPU; the GB200 recipe runs without it. DeepSeek's own dual micro-batch overlap and 5-stage
  decode pipeline (its service rows): no, those rows are the step without overlap.
- MTP (DeepSeek's own service): reported with one drafted token at the acceptance DeepSeek-V3's report gives.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from advisor.arch.model import ModelArch
from advisor.arch.redundant import redundant_experts
from advisor.cost.plan import Plan
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile, load_profile
from advisor.hardware.cluster import Cluster, load_cluster

REPO = Path(__file__).resolve().parents[1]
LMSYS_H100 = "https://lmsys.org/blog/2025-05-05-large-scale-ep/"
LMSYS_H100_CMDS = "https://github.com/sgl-project/sglang/issues/6017"
LMSYS_GB200 = "https://lmsys.org/blog/2025-06-16-gb200-part-1/"
GB200_RECIPE = ("https://github.com/ai-dynamo/dynamo/blob/main/components/backends/sglang/slurm_jobs/scripts/"
                "gb200-fp8.sh")
DEEPSEEK = ("https://github.com/deepseek-ai/open-infra-index/blob/main/202502OpenSourceWeek/"
            "day_6_one_more_thing_deepseekV3R1_inference_system_overview.md")
# DeepSeek-V3 technical report (arXiv 2412.19437) §5.4.3: the second token's "acceptance rate is between 85% and
# 90%"; the midpoint
MTP_ACCEPTANCE = 0.875
REDUNDANT = 32  # --ep-num-redundant-experts in every source's command


@dataclass(frozen=True)
class Deployment:
    """One published figure and the advisor's prediction of it."""

    name: str
    source: str
    conditions: str
    metric: str
    published: float
    predicted: float
    targeted: bool
    breakdown: str = ""

    @property
    def error_pct(self) -> float:
        return 100 * (self.predicted - self.published) / self.published


def deepep_comm(cluster: Cluster, engine: str, mode: str, ep: int,
                moe: tuple[int, int, int]) -> Callable[..., np.ndarray]:
    """The step model's collective timer on `cluster` with the MoE exchange run as DeepEP `mode` ("deepep_normal" or
    "deepep_ll"): the plan's DeepEP slots across nodes take that mode, and an all-gather/reduce-scatter exchange of
    the EP group inside one NVLink domain (SGLang's default there) becomes DeepEP dispatch/combine of the same tokens
    (dispatch FP8 with scales, combine BF16; `collectives._moe_exchange`)."""
    from advisor.cost.cluster_comm import cluster_comm_fn
    from advisor.cost.collectives import DEEPEP_DISPATCH_BYTES, DISPATCH_BYTES
    from advisor.cost.step import comm_fn

    inner = cluster_comm_fn(cluster, engine, comm_fn(cluster.node, engine))
    hidden, topk, _ = moe
    gathered = DISPATCH_BYTES["fp8-block"]  # what an all-gather dispatch moves per element

    def f(op: str, nbytes: np.ndarray, n: int, domains: int = 1, backend: str | None = None,
          shape: tuple[int, int, int] | None = None) -> np.ndarray:
        if backend is not None:
            return np.asarray(inner(op, nbytes, n, domains, mode, shape), dtype=float)
        if op in ("allgather", "reducescatter") and n == ep:
            per = gathered if op == "allgather" else 2.0
            tokens = np.asarray(nbytes, dtype=float) / (n * hidden * per)  # each rank's tokens
            a2a = "dispatch" if op == "allgather" else "combine"
            size = tokens * topk * hidden * (DEEPEP_DISPATCH_BYTES if a2a == "dispatch" else 2.0)
            return np.asarray(inner(a2a, size, n, domains, mode, moe), dtype=float)
        return np.asarray(inner(op, nbytes, n, domains) if domains > 1 else inner(op, nbytes, n), dtype=float)

    return f


def step_s(arch: ModelArch, hw: HardwareProfile, nodes: int, plan: Plan, settings: dict, mode: str, *,
           dec: float = 0.0, ctx: float = 0.0, pre: float = 0.0, prompt: float = 0.0) -> tuple[float, dict]:
    """Seconds of one step of `plan` on `nodes` nodes under the engine's shipped terms (MTP's verify and draft passes
    as `cost/disagg_serving.py: pool_step` adds them), with the exchange in DeepEP `mode`; and the case's args."""
    from advisor.calibrate.store import terms_for
    from advisor.cost.features import Features
    from advisor.cost.step import step_time
    from advisor.cost.sweep import make_case

    cluster = load_cluster(hw, nodes)
    case = make_case(arch, plan, hw, Settings.model_validate(settings), cluster=cluster)
    if not case.runs:
        raise SystemExit(f"large_deployments: {plan.label()} on {nodes} x {hw.id}: {case.reason}")
    terms = terms_for(hw, case.args.engine)[0]
    assert arch.moe is not None
    comm = deepep_comm(cluster, case.args.engine, mode, plan.ep, (arch.hidden_size, arch.moe.experts_per_token,
                                                                  arch.moe.num_experts))
    F = Features.from_flat(np.stack([case.features()])).grid()
    one = [np.full((1, 1, 1), float(v)) for v in (dec, ctx, pre, prompt / 2, dec + (pre / prompt if pre else 0))]
    q = 1 + F.spec_k
    dec_a, ctx_a, pre_a, ctx_pre, sampled = one
    t = float(np.ravel(step_time(F, hw, terms, comm, dec_a, ctx_a, pre_a, ctx_pre, sampled, q=q)["total"])[0])
    if dec and float(F.spec_k.ravel()[0]) > 0:  # MTP draft passes: k one-token steps' worth of one layer each
        plain = float(np.ravel(step_time(F, hw, terms, comm, one[0], one[1], 0 * one[2], one[3], one[0])["total"])[0])
        t += float(F.spec_k.ravel()[0]) * plain / float(F.layers.ravel()[0])
    return t, {"spec_tokens": float(F.spec_tokens.ravel()[0]), "batched_tokens": case.args.max_num_batched_tokens}


def deepseek_v3(arch: ModelArch | None = None) -> ModelArch:
    from advisor.resolve import resolve

    return redundant_experts(arch or resolve("deepseek-ai/DeepSeek-V3").arch, REDUNDANT)


def sglang_h100(arch: ModelArch, tbo: bool = True) -> list[Deployment]:
    """LMSYS 2025-05-05: prefill 4 nodes EP32 at 16,384 tokens a device (`--chunked-prefill-size 524288` over 32 DP
    ranks, `--mem-fraction-static 0.85`), decode 9 nodes EP72 at 256 sequences a device (`--cuda-graph-bs 256`,
    `--mem-fraction-static 0.835`), 2,000-token inputs, both with `--enable-two-batch-overlap` (issue 6017's
    commands); `tbo=False`: the same without it (the blog's TBO ablation)."""
    h100 = load_profile("h100-sxm")
    pre_set = {"engine": "sglang", "max_num_batched_tokens": 16384, "max_model_len": 8192,
               "gpu_memory_utilization": 0.85, "two_batch_overlap": tbo}
    t, _ = step_s(arch, h100, 4, Plan(tp=1, dp=32, ep=32), pre_set, "deepep_normal", pre=16384, prompt=2000)
    prefill = Deployment("SGLang DeepSeek-V3, 96 x H100: prefill", f"[LMSYS 2025-05-05]({LMSYS_H100})",
                         "4 nodes (EP32, DP attention), 2,000-token prompts, 16,384 tokens a GPU per batch, DeepEP "
                         "normal, EPLB (288 slots), TBO on", "input tok/s per node", 52_300, 8 * 16384 / t, True)
    dec_set = {"engine": "sglang", "max_num_seqs": 256, "max_model_len": 4500, "gpu_memory_utilization": 0.835,
               "two_batch_overlap": tbo}
    t, _ = step_s(arch, h100, 9, Plan(tp=1, dp=72, ep=72), dec_set, "deepep_ll", dec=256, ctx=2000)
    decode = Deployment("SGLang DeepSeek-V3, 96 x H100: decode", f"[LMSYS 2025-05-05]({LMSYS_H100})",
                        "9 nodes (EP72), 256 sequences a GPU, KV length 2,000, DeepEP low-latency, EPLB (288 "
                        "slots), TBO on", "output tok/s per node", 22_282, 8 * 256 / t, True)
    return [prefill, decode]


def sglang_gb200(arch: ModelArch) -> Deployment:
    """LMSYS 2025-06-16: 12 GB200 trays decode (DEP48) with the recipe's 768 running requests a GPU
    (`--max-running-requests 36864` over 48 ranks, gb200-fp8.sh), 2,000 in / 100 out, DeepEP low-latency over NVLink,
    TBO off; the batch the GPU's KV room holds if smaller."""
    from advisor.cost.disagg_serving import decode_side
    from advisor.cost.sweep import make_case

    gb200 = load_profile("gb200")
    dec_set = {"engine": "sglang", "max_num_seqs": 768, "max_model_len": 9600, "gpu_memory_utilization": 0.82}
    case = make_case(arch, Plan(tp=1, dp=48, ep=48), gb200, Settings.model_validate(dec_set),
                     cluster=load_cluster(gb200, 12))
    from advisor.calibrate.store import terms_for

    b = float(decode_side([case], terms_for(gb200, "sglang")[0], 2000, 100).cap[0])
    t, _ = step_s(arch, gb200, 12, Plan(tp=1, dp=48, ep=48), dec_set, "deepep_ll", dec=b, ctx=2050)
    return Deployment("SGLang DeepSeek (FP8), GB200 NVL72: decode", f"[LMSYS 2025-06-16]({LMSYS_GB200})",
                      f"12 trays (DEP48), {b:.0f} sequences a GPU, 2,000 in / 100 out, DeepEP low-latency over "
                      f"NVLink, EPLB (288 slots, [recipe]({GB200_RECIPE})), TBO off", "output tok/s per GPU",
                      7_583, b / t, True)


def deepseek_h800(arch: ModelArch) -> list[Deployment]:
    """DeepSeek's service (2025-03-01): prefill units of 4 nodes (EP32), decode units of 18 nodes (EP144), 32
    redundant experts, MTP; daily averages per H800 node. The H100 profile stands in for the H800 (same SMs and
    HBM3; the H800's NVLink is 400 GB/s, which EP over DeepEP across nodes hardly uses). Prefill compared without
    the cache hits (32,206 tok/s per node, LMSYS's reading of the same figures) at 16,384 tokens a GPU and 4,096-token
    prompts (DeepSeek's profile data); decode at 128 sequences a GPU and the average KV length 4,989 (both from
    DeepSeek's overview), one MTP token."""
    h100 = load_profile("h100-sxm")
    pre_set = {"engine": "sglang", "max_num_batched_tokens": 16384, "max_model_len": 8192,
               "gpu_memory_utilization": 0.85}
    t, _ = step_s(arch, h100, 4, Plan(tp=1, dp=32, ep=32), pre_set, "deepep_normal", pre=16384, prompt=4096)
    prefill = Deployment("DeepSeek's service, H800: prefill (cache hits excluded)",
                         f"[DeepSeek 2025-03-01]({DEEPSEEK})",
                         "units of 4 nodes (EP32), daily average; advisor on the H100 profile (H800 stand-in), 16,384 "
                         "tokens a GPU, 4,096-token prompts",
                         "input tok/s per node", 32_206, 8 * 16384 / t, False)
    dec_set = {"engine": "sglang", "max_num_seqs": 128, "max_model_len": 8192, "gpu_memory_utilization": 0.835,
               "speculative": True, "speculative_tokens": 1, "spec_acceptance": MTP_ACCEPTANCE}
    t, info = step_s(arch, h100, 18, Plan(tp=1, dp=144, ep=144), dec_set, "deepep_ll", dec=128, ctx=4989)
    decode = Deployment("DeepSeek's service, H800: decode", f"[DeepSeek 2025-03-01]({DEEPSEEK})",
                        "units of 18 nodes (EP144), 128 sequences a GPU, KV length 4,989, MTP, daily average; advisor "
                        "on the H100 profile, one MTP token at 87.5% acceptance",
                        "output tok/s per node", 14_800, 8 * 128 * info["spec_tokens"] / t, False)
    return [prefill, decode]


def deployments() -> list[Deployment]:
    arch = deepseek_v3()
    return [*sglang_h100(arch), sglang_gb200(arch), *deepseek_h800(arch)]


def deployment_lines(rows: list[Deployment]) -> list[str]:
    lines = ["| deployment | source | conditions | metric | published | advisor | error | target |",
             "|---|---|---|---|---:|---:|---:|---|"]
    for d in rows:
        target = ("within 25%: " + ("met" if abs(d.error_pct) <= 25 else "missed")) if d.targeted else "reported"
        lines.append(f"| {d.name} | {d.source} | {d.conditions} | {d.metric} | {d.published:,.0f} | "
                     f"{d.predicted:,.0f} | {d.error_pct:+.0f}% | {target} |")
    return lines


def block(terms_for: Callable[[HardwareProfile, str], Terms] | None = None) -> str:
    """The generated block: the NVSwitch model's checks, the rack rows held out by GPU (under `terms_for` when
    given, e.g. the shipped terms for a cheap structural check), the published deployments."""
    from scripts import nvswitch_fit, rack_rows

    gen = nvswitch_fit.params_doc()["generations"]["nvlink5"]
    checks = nvswitch_fit.checks(gen)
    trays = [r["median_abs_pct"] for r in checks if r["gpu"] in nvswitch_fit.HELD_OUT]
    eights = [r["median_abs_pct"] for r in checks if r["gpus"] == 8]
    res = rack_rows.predict(terms_for)
    out = ["Written by `python -m scripts.large_deployments --update`; do not edit by hand.", "",
           f"NCCL over an NVLink5 NVSwitch domain (`advisor/hardware/nvswitch.py`, fitted on the HGX B200/B300 tables, "
           f"in sample {gen['in_sample_median_abs_pct']:.1f}%): the GB200/GB300 trays' tables held out, median |error| "
           f"per op and GPU count {min(trays):.1f}-{max(trays):.1f}%; the 8-GPU B200/B300 tables from a fit on 2 and "
           f"4 GPUs {min(eights):.1f}-{max(eights):.1f}% (`python -m scripts.nvswitch_fit`).", "",
           f"The rack-scale rows, GPU held out (terms fitted without GB200 and B200), "
           f"{len(res.predicted)} of {len(res.rows)} predicted:", "",
           *rack_rows.summary_lines(res), "", *rack_rows.row_lines(res), "",
           "Published large deployments (one pool each, measured alone; the advisor's step at the stated conditions):",
           "", *deployment_lines(deployments())]
    return "\n".join(out) + "\n"


def main() -> int:
    from scripts.readme_block import home, replace_block

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", type=Path, nargs="?", const=home("racks-large"), metavar="FILE",
                    help="write the block into FILE (default docs/accuracy.md)")
    args = ap.parse_args()
    text = block()
    if args.update is None:
        sys.stdout.write(text)
    else:
        replace_block(args.update, "racks-large", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
