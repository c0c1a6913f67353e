"""`advisor fit [MODEL...]`: which plans fit in memory, with how much KV cache left, in the start-up log's words."""

from __future__ import annotations

from advisor.commands import options as opt


def fit(models: opt.Models = None, hw: opt.Hw = opt.DEFAULT_HW, gpus: opt.Gpus = None, nodes: opt.Nodes = None,
        fabric: opt.FabricOpt = None, tp: opt.Tp = None,
        pp: opt.Pp = None, dp: opt.Dp = None, ep: opt.Ep = None, max_model_len: opt.MaxModelLen = None,
        kv_cache_dtype: opt.KvCacheDtype = opt.DEFAULT_KV_CACHE_DTYPE,
        gpu_memory_utilization: opt.GpuMemoryUtilization = None,
        weight_dtype: opt.WeightDtypeOpt = None, engine: opt.EngineOpt = opt.DEFAULT_ENGINE,
        engine_version: opt.EngineVersion = None, moe_a2a: opt.MoeA2a = "default",
        two_batch_overlap: opt.TwoBatchOverlap = False, json_out: opt.Json = False) -> None:
    """Memory per GPU for each model and plan as the engine accounts it: weights, activation peak, non-torch
    and CUDA-graph memory, KV room and concurrency, with the start-up log lines the engine would print
    ("Model loading took", "Available KV cache memory", "GPU KV cache size", "Maximum concurrency")."""
    from advisor.decide.single import fit as fit_plans
    from advisor.report.sink import emit, note
    from advisor.report.tables import fit_table

    profile = opt.hardware(hw, gpus)
    settings = opt.settings(engine=engine, engine_version=engine_version, moe_a2a=moe_a2a,
                            tbo=two_batch_overlap, max_model_len=max_model_len,
                            kv_cache_dtype=kv_cache_dtype, gpu_memory_utilization=gpu_memory_utilization,
                            weight_dtype=weight_dtype)
    plan = opt.plan_from_flags(tp, pp, dp, ep)
    docs, skipped = fit_plans(models, profile, settings, plan, gpus, max_model_len,
                              opt.cluster(profile, nodes, fabric, gpus))
    for line in skipped:
        note(line)
    emit(docs, json_out, lambda d: fit_table(d, profile))
