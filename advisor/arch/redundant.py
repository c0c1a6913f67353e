"""Redundant expert slots (EPLB): an engine that places E experts in E + r physical slots over its EP ranks holds r
extra copies of whole experts, so every rank keeps (E + r) / EP slots of the MoE's weights and tokens are routed over
the slots.

SGLang: `--ep-num-redundant-experts r` (`srt/server_args.py`), the physical experts E + r spread evenly over the EP
ranks (`srt/eplb/expert_location.py: ExpertLocationMetadata`, `num_local_physical_experts = num_physical_experts //
ep_size`), so EP must divide E + r (DEP48 and DEP24 over DeepSeek's 256 experts run only with redundant slots, 32 in
the recipes of the measured runs: tests/data/bench/README.md). TensorRT-LLM's MoE load balancer (`num_slots`) is the
same placement.

The model here: E + r experts, each slot a whole expert's weights, routing uniform over the slots (the balance EPLB
buys is what the cost model assumes anyway). The one owner of that rule: the measured-run predictors
(`calibrate/disagg_predict.py`, the `*_redundant_experts` cells) and the published-deployment script use it.
"""

from __future__ import annotations

from advisor.arch.model import ModelArch


def redundant_experts(arch: ModelArch, extra: int) -> ModelArch:
    """`arch` with `extra` redundant expert slots: experts E -> E + extra and the routed experts' weights (shard
    "expert") scaled by (E + extra) / E; `arch` itself when extra is 0 or the model has no MoE."""
    if extra <= 0 or arch.moe is None:
        return arch
    e = arch.moe.num_experts
    weights = [w.model_copy(update={"params": w.params * (e + extra) // e}) if w.shard == "expert" else w
               for w in arch.weights]
    return arch.model_copy(update={"moe": arch.moe.model_copy(update={"num_experts": e + extra}),
                                   "weights": type(arch.weights)(weights)})
