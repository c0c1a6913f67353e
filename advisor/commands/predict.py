"""`advisor predict MODEL --tp ..`: TTFT, TPOT, throughput, communication and the step breakdown."""

from __future__ import annotations

import typer

from advisor.commands import _options as opt
from advisor.commands._common import print_json

CONCURRENCY = typer.Option(1, "--concurrency", help="Concurrent users (closed loop).")
INPUT_LEN = typer.Option(1024, "--input-len", help="Prompt tokens per request.")
OUTPUT_LEN = typer.Option(1024, "--output-len", help="Generated tokens per request.")


def register(app: typer.Typer) -> None:
    @app.command()
    def predict(
        model: str = typer.Argument(..., help="ORG/NAME[@REV], a folder with config.json, or a config file."),
        hw: str = opt.HW, gpus: int | None = opt.GPUS,
        tp: int | None = typer.Option(None, "--tp"), pp: int | None = typer.Option(None, "--pp"),
        dp: int | None = typer.Option(None, "--dp"), ep: int | None = typer.Option(None, "--ep"),
        concurrency: int = CONCURRENCY, input_len: int = INPUT_LEN, output_len: int = OUTPUT_LEN,
        max_model_len: int | None = opt.MAX_MODEL_LEN, kv_cache_dtype: str = opt.KV_DTYPE,
        gpu_memory_utilization: float = opt.UTIL, weight_dtype: str | None = opt.WEIGHT_DTYPE,
        engine: str = opt.ENGINE, calibration: str | None = opt.CALIBRATION, json_out: bool = opt.JSON,
    ) -> None:
        """Predict serving speed of one model at one plan (default: TP over all GPUs)."""
        import numpy as np

        from advisor.arch.sources import resolve
        from advisor.calibrate.store import terms_for
        from advisor.cost.plan import Plan
        from advisor.cost.predict import evaluate, make_case
        from advisor.report.results import fit_doc, predict_doc

        profile = opt.hardware(hw, gpus)
        settings = opt.settings(max_model_len, kv_cache_dtype, gpu_memory_utilization, weight_dtype, engine,
                                input_len + output_len)
        plan = opt.plan_from_flags(tp, pp, dp, ep) or Plan(tp=gpus or profile.topology.num_gpus)
        r = resolve(model)
        opt.check_lengths(r.arch.max_context, r.arch.model, input_len, output_len, concurrency, max_model_len)
        terms, calibrated = terms_for(profile, engine, calibration)
        case = make_case(r.arch, plan, profile, settings, gpus)
        workload = {"concurrency": concurrency, "input_len": input_len, "output_len": output_len}
        if not case.runs:
            doc = {**fit_doc(case, profile, r.source), "workload": workload, "calibrated": calibrated}
        else:
            res = evaluate([case], profile, settings, terms, np.array([concurrency]), np.array([input_len]),
                           np.array([output_len]))
            doc = predict_doc(case, profile, res, 0, 0, 0, workload, calibrated, r.source)
        if json_out:
            print_json(doc)
        else:
            from advisor.report.tables import predict_panel

            predict_panel(doc)
