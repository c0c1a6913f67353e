"""`advisor predict MODEL --tp ..`: TTFT, TPOT, throughput, communication and the step breakdown."""

from __future__ import annotations

from advisor.commands import options as opt


def predict(model: opt.Model, hw: opt.Hw = opt.DEFAULT_HW, gpus: opt.Gpus = None, nodes: opt.Nodes = None,
            fabric: opt.FabricOpt = None, tp: opt.Tp = None,
            pp: opt.Pp = None, dp: opt.Dp = None, ep: opt.Ep = None,
            concurrency: opt.Concurrency = 1, input_len: opt.InputLen = opt.DEFAULT_INPUT_LEN,
            output_len: opt.OutputLen = opt.DEFAULT_OUTPUT_LEN, max_model_len: opt.MaxModelLen = None,
            kv_cache_dtype: opt.KvCacheDtype = opt.DEFAULT_KV_CACHE_DTYPE,
            gpu_memory_utilization: opt.GpuMemoryUtilization = None,
            weight_dtype: opt.WeightDtypeOpt = None, engine: opt.EngineOpt = opt.DEFAULT_ENGINE,
            engine_version: opt.EngineVersion = None, moe_a2a: opt.MoeA2a = "default",
            two_batch_overlap: opt.TwoBatchOverlap = False,
            calibration: opt.Calibration = None, speculative: opt.Speculative = "off",
            spec_tokens: opt.SpecTokens = None, spec_acceptance: opt.SpecAcceptance = None,
            json_out: opt.Json = False,
            prefill_tp: opt.PrefillTp = None, prefill_pp: opt.PrefillPp = None, prefill_dp: opt.PrefillDp = None,
            prefill_ep: opt.PrefillEp = None, prefill_workers: opt.PrefillWorkers = None,
            decode_tp: opt.DecodeTp = None, decode_pp: opt.DecodePp = None, decode_dp: opt.DecodeDp = None,
            decode_ep: opt.DecodeEp = None, decode_workers: opt.DecodeWorkers = None,
            kv_backend: opt.KvBackend = None) -> None:
    """Predict serving speed of one model at one plan (default: TP over all GPUs), or of a disaggregated
    deployment: --prefill-workers x (--prefill-tp/pp/dp/ep) and --decode-workers x (--decode-tp/pp/dp/ep) joined by
    a KV transfer (--kv-backend), with the commands of every worker and the router.

    Example: advisor predict MiniMaxAI/MiniMax-M2.5 --prefill-tp 2 --prefill-dp 2 --prefill-ep 4 --decode-tp 2
    --decode-dp 2 --decode-ep 4 --concurrency 16 --input-len 8192"""
    from advisor.cost.plan import Plan
    from advisor.cost.prediction import Workload
    from advisor.decide.single import predict as predict_plan
    from advisor.report.sink import emit
    from advisor.report.tables import predict_panel

    profile = opt.hardware(hw, gpus)
    if speculative == "auto":
        from advisor.errors import AdvisorError

        raise AdvisorError("--speculative auto: only rank compares with and without; predict takes off or mtp")
    settings = opt.settings(engine=engine, engine_version=engine_version, moe_a2a=moe_a2a,
                            tbo=two_batch_overlap, max_model_len=max_model_len,
                            kv_cache_dtype=kv_cache_dtype, gpu_memory_utilization=gpu_memory_utilization,
                            weight_dtype=weight_dtype,
                            need_tokens=input_len + output_len,
                            spec=opt.speculation(speculative, spec_tokens, spec_acceptance))
    cluster = opt.cluster(profile, nodes, fabric, gpus)
    pools = opt.pools((prefill_tp, prefill_pp, prefill_dp, prefill_ep, prefill_workers),
                      (decode_tp, decode_pp, decode_dp, decode_ep, decode_workers), kv_backend,
                      opt.plan_from_flags(tp, pp, dp, ep))
    if pools is not None:  # a disaggregated deployment (`commands/disagg.py`)
        from advisor.commands.disagg import predict_pools_cmd, refuse
        from advisor.decide.disagg_rank import Where

        refuse({"--speculative": speculative != "off"}, "disagg")
        return predict_pools_cmd(model, pools, Where(hw=profile, settings=settings, cluster=cluster, gpus=gpus,
                                                     calibration=calibration),
                                 Workload(concurrency=concurrency, input_len=input_len, output_len=output_len),
                                 max_model_len, json_out)
    # default: TP over a node's GPUs, PP over the nodes (vLLM's multi-node rule, `docs/serving/parallelism_scaling.md`)
    plan = opt.plan_from_flags(tp, pp, dp, ep) or Plan(tp=gpus or profile.topology.num_gpus,
                                                       pp=cluster.nodes if cluster else 1)
    w = Workload(concurrency=concurrency, input_len=input_len, output_len=output_len)
    emit(predict_plan(model, plan, profile, settings, gpus, w, calibration, max_model_len, cluster), json_out,
         predict_panel)
