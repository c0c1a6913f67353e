"""`advisor predict MODEL --tp ..`: TTFT, TPOT, throughput, communication and the step breakdown."""

from __future__ import annotations

from advisor.commands import options as opt
from advisor.commands.output import emit


def predict(model: opt.Model, hw: opt.Hw = opt.DEFAULT_HW, gpus: opt.Gpus = None, tp: opt.Tp = None,
            pp: opt.Pp = None, dp: opt.Dp = None, ep: opt.Ep = None,
            concurrency: opt.Concurrency = 1, input_len: opt.InputLen = opt.DEFAULT_INPUT_LEN,
            output_len: opt.OutputLen = opt.DEFAULT_OUTPUT_LEN, max_model_len: opt.MaxModelLen = None,
            kv_cache_dtype: opt.KvCacheDtype = "auto",
            gpu_memory_utilization: opt.GpuMemoryUtilization = None,
            weight_dtype: opt.WeightDtypeOpt = None, engine: opt.EngineOpt = "vllm",
            engine_version: opt.EngineVersion = None,
            calibration: opt.Calibration = None, speculative: opt.Speculative = "off",
            spec_tokens: opt.SpecTokens = None, spec_acceptance: opt.SpecAcceptance = None,
            json_out: opt.Json = False) -> None:
    """Predict serving speed of one model at one plan (default: TP over all GPUs)."""
    import numpy as np

    from advisor.calibrate.store import terms_for
    from advisor.commands.models import resolve_models
    from advisor.cost.plan import Plan
    from advisor.cost.prediction import Workload
    from advisor.cost.sweep import evaluate, make_case, not_running
    from advisor.report.tables import predict_panel

    profile = opt.hardware(hw, gpus)
    if speculative == "auto":
        from advisor.errors import AdvisorError

        raise AdvisorError("--speculative auto: only rank compares with and without; predict takes off or mtp")
    settings = opt.settings(max_model_len, kv_cache_dtype, gpu_memory_utilization, weight_dtype, engine,
                            input_len + output_len, engine_version,
                            opt.speculation(speculative, spec_tokens, spec_acceptance))
    plan = opt.plan_from_flags(tp, pp, dp, ep) or Plan(tp=gpus or profile.topology.num_gpus)
    (r,), _ = resolve_models([model])
    opt.check_lengths(r.arch.max_context, r.arch.model, input_len, output_len, max_model_len)
    terms, calibrated = terms_for(profile, engine, calibration)
    case = make_case(r.arch, plan, profile, settings, gpus, r.source)
    if case.runs:
        sweep = evaluate([case], profile, settings, terms, np.array([concurrency]), np.array([input_len]),
                         np.array([output_len]), calibrated)
        doc = sweep.at(0, concurrency)
    else:
        doc = not_running(case, profile, Workload(concurrency=concurrency, input_len=input_len,
                                                  output_len=output_len), calibrated)
    emit(doc, json_out, predict_panel)
