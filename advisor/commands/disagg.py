"""The disaggregated forms of `rank`, `predict` and `pareto` (`--mode disagg|auto`, `--prefill-*`/`--decode-*`):
flags checked and handed to `advisor/decide/disagg_*.py`, the typed result to `advisor/report/disagg_*.py`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.cost.prediction import Workload
    from advisor.decide.disagg_one import Pools
    from advisor.decide.disagg_rank import Where
    from advisor.decide.query import Query


def refuse(flags: dict[str, bool], mode: str) -> None:
    """One line for the first flag given that the disaggregated answer does not take."""
    for flag, given in flags.items():
        if given:
            raise AdvisorError(f"{flag}: not with --mode {mode} (the comparison is output tok/s on the GPUs within "
                               "the latency targets, one box or cluster)")


def rank_modes(models: list[str] | None, q: Query, where: Where, mode: str, max_model_len: int | None,
               json_out: bool) -> None:
    """`rank --mode disagg|auto`: needs a latency target (what the comparison is made within)."""
    from advisor.decide.candidates import candidates
    from advisor.decide.disagg_rank import rank_disagg
    from advisor.decide.disagg_verdict import DisaggQuery
    from advisor.report.disagg_tables import disagg_rank_table
    from advisor.report.sink import emit

    if q.max_tpot_ms is None and q.max_ttft_ms is None:
        raise AdvisorError(f"--mode {mode}: needs --max-tpot-ms and/or --max-ttft-ms (both answers are compared by "
                           "output tok/s within them)")
    if q.output_len < 2:
        raise AdvisorError("--output-len: a disaggregated deployment decodes at least 2 tokens (the first is the "
                           "prefill's)")
    good, unknown = candidates(models, q, max_model_len)
    dq = DisaggQuery(input_len=q.input_len, output_len=q.output_len, max_tpot_ms=q.max_tpot_ms,
                     max_ttft_ms=q.max_ttft_ms)
    ranking = rank_disagg(good, unknown, where, dq, mode)  # type: ignore[arg-type]
    emit([*ranking.rows, *ranking.unranked], json_out, lambda _: disagg_rank_table(ranking))


def predict_pools_cmd(model: str, pools: Pools, where: Where, w: Workload, max_model_len: int | None,
                      json_out: bool) -> None:
    """`predict --prefill-* --decode-*`."""
    from advisor.decide.disagg_one import predict_pools
    from advisor.report.disagg_tables import disagg_predict_panel
    from advisor.report.sink import emit

    emit(predict_pools(model, pools, where, w, max_model_len), json_out, disagg_predict_panel)


def pareto_modes(models: list[str] | None, q: Query, where: Where, mode: str, max_model_len: int | None,
                 out: dict[str, Any]) -> None:
    """`pareto --mode disagg|auto`: the disaggregated frontier of each model, beside the aggregated one (auto)."""
    from advisor.calibrate.store import terms_for
    from advisor.decide.candidates import candidates
    from advisor.decide.disagg_pareto import disagg_frontier
    from advisor.decide.pareto import Frontier
    from advisor.decide.pareto import pareto as frontier_of
    from advisor.report.disagg_tables import disagg_pareto_csv, disagg_pareto_lines
    from advisor.report.sink import emit, warn

    good, unknown = candidates(models, q, max_model_len)
    for u in unknown:
        warn(f"{u.model}: {u.reason}")
    points = list(frontier_of(good, q, where.hw, where.settings, where.gpus, where.calibration, where.cluster).points
                  ) if mode == "auto" else []
    terms, _ = terms_for(where.hw, where.settings.engine, where.calibration)
    for r in good:
        mine = disagg_frontier(r, where.hw, where.settings, terms, q, where.cluster, where.gpus)
        if not mine:
            warn(f"{r.arch.model}: no disaggregated deployment: no plan leaves room for a second pool")
        points += mine
    if not points:
        raise AdvisorError("nothing to draw: no model has a disaggregated deployment on this box")
    front = Frontier(points=tuple(points), query=q)
    if out["output"] is not None:
        from advisor.report.disagg_plot import write_disagg_figure

        write_disagg_figure(front, where.hw.id, where.settings.engine, out["output"])
    shown = [p for p in front.points if p.frontier or not out["frontier_only"]]
    if out["csv"]:
        disagg_pareto_csv(shown)
        return
    emit(shown, out["json"], lambda _: disagg_pareto_lines(front, out["output"]))


def rank_modes_flags(models: list[str] | None, q: Query, boxes: list[str], settings: Any, mode: str,
                     max_model_len: int | None, json_out: bool, calibration: str | None, gpus: int | None,
                     cluster: Any, refused: dict[str, bool]) -> None:
    """`rank --mode disagg|auto` from rank's flags: those it does not take refused (one line), one box."""
    from advisor.commands import options as opt
    from advisor.decide.disagg_rank import Where

    refuse({k if k != "--hw" else "--hw (several boxes)": v for k, v in refused.items()}, mode)
    where = Where(hw=opt.hardware(boxes[0], gpus), settings=settings, cluster=cluster, gpus=gpus,
                  calibration=calibration)
    rank_modes(models, q, where, mode, max_model_len, json_out)


def check_disagg_cmd(files: list[str], calibration: str | None, defaults: dict[str, Any], json_out: bool,
                     summary_only: bool) -> bool:
    """`check` of disaggregated files (`calibrate/disagg_check.py`); False when no file is disaggregated (the
    aggregated check runs). Aggregated and disaggregated files in one run: one line."""
    from advisor.calibrate.disagg_predict import is_disagg_file

    disagg = [f for f in files if is_disagg_file(f)]
    if not disagg:
        return False
    if len(disagg) < len(files):
        other = next(f for f in files if f not in disagg)
        raise AdvisorError(f"{other}: aggregated rows beside the disaggregated {disagg[0]}: check them in separate "
                           "runs")
    from advisor.calibrate.disagg_check import check_disagg_files
    from advisor.report.disagg_check import show_disagg_check

    show_disagg_check(check_disagg_files(files, calibration, defaults), json_out, summary_only)
    return True
