"""The 80% interval of a prediction, from the signed held-out errors of the calibration it used.

A calibration stores, per metric, the 10th and 90th percentiles (p10, p90, in %) of the signed errors
e = (predicted - measured) / measured of rows it never saw (`calibrate/store.py`: the pooled fit's `residual_pct`,
leave-one-model-out; a user's fit: `tpot_residual_pct`). The measured value then lies in
[predicted / (1 + p90), predicted / (1 + p10)] for 80% of such rows (`docs/accuracy.md` gives the coverage).

tok/s have no errors of their own in the calibrations; they follow from the two that do (`cost/serving.py: serve`):
- per user while decoding, 1 / TPOT: TPOT's interval inverted, exactly;
- total, running x output_len / lifetime with lifetime = (TTFT's part) + (output_len - 1) x TPOT: the lifetime with
  its TTFT part and its decode part each at its own bound. That is an 80% interval when the two errors move together
  and a wider one when they do not (it never claims more certainty than the two intervals give).
"""

from __future__ import annotations

from typing import Any


def spreads(calibrated: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """metric -> (p10, p90) of the signed held-out % errors the calibration stores (empty: none)."""
    got = calibrated.get("residual_pct") or (
        {"tpot_ms": calibrated["tpot_residual_pct"]} if calibrated.get("tpot_residual_pct") else {})
    return {m: (float(lo), float(hi)) for m, (lo, hi) in got.items()}


def interval(calibrated: dict[str, Any], *, ttft_ms: float, tpot_ms: float, output_tok_s: float, running: int,
             output_len: int) -> dict[str, float] | None:
    """`{metric}_low`/`{metric}_high` for ttft_ms and tpot_ms (where the calibration has their errors), and
    per_user_tok_s and output_tok_s derived from them (module docstring); None without any error spread."""
    out: dict[str, float] = {}
    for m, value in (("ttft_ms", ttft_ms), ("tpot_ms", tpot_ms)):
        if m in (sp := spreads(calibrated)):
            lo, hi = sp[m]
            out[f"{m}_low"] = value / (1 + hi / 100)
            out[f"{m}_high"] = value / (1 + max(lo, -99.0) / 100)
    if "tpot_ms_low" not in out or tpot_ms <= 0:
        return out or None
    out["per_user_tok_s_low"] = 1e3 / out["tpot_ms_high"]
    out["per_user_tok_s_high"] = 1e3 / out["tpot_ms_low"]
    if output_tok_s > 0 and running > 0:
        lifetime = running * output_len / output_tok_s * 1e3  # ms per request, `serve`'s lifetime
        decode = max(output_len - 1, 0) * tpot_ms
        rest = max(lifetime - decode, 0.0)
        scale = (out["ttft_ms_low"] / ttft_ms, out["ttft_ms_high"] / ttft_ms) if "ttft_ms_low" in out and ttft_ms > 0 \
            else (1.0, 1.0)
        shortest = rest * scale[0] + decode * out["tpot_ms_low"] / tpot_ms
        longest = rest * scale[1] + decode * out["tpot_ms_high"] / tpot_ms
        out["output_tok_s_low"] = output_tok_s * lifetime / longest
        out["output_tok_s_high"] = output_tok_s * lifetime / max(shortest, 1e-12)
    return out
