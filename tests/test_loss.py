"""The calibration fits' robust loss (`advisor/calibrate/loss.py`): Cauchy, a tight scale on TTFT residuals and a
wide one on the rest, checked by hand and on the synthetic grid of test_calibrate with stalled TTFT and TPOT rows."""

from __future__ import annotations

import numpy as np
import pytest
from test_calibrate import TRUE, _synthetic

from advisor.calibrate.fit import Calibrator
from advisor.calibrate.loss import WIDE, heavy_tailed, robust_loss
from advisor.calibrate.predict_table import prepare


def test_each_residual_gets_its_own_scale_by_hand() -> None:
    # z = 3, tight: ln 4, 1 / 4, -1 / 16; wide (W = 2): 4 ln(1 + 3/4), 1 / 1.75, -1 / (4 * 1.75^2)
    assert WIDE == 2.0
    rho = robust_loss(np.array([False, True]))(np.array([3.0, 3.0]))
    assert rho[:, 1] == pytest.approx([np.log(4.0), 0.25, -1 / 16])
    assert rho[:, 0] == pytest.approx([4 * np.log(1.75), 1 / 1.75, -1 / (4 * 1.75 ** 2)])


def test_the_derivatives_are_the_losses_own() -> None:
    z, h = np.array([0.0, 0.5, 4.0, 100.0]), 1e-6
    for tight in (np.zeros(4, bool), np.ones(4, bool)):
        f = robust_loss(tight)
        d1 = (f(z + h)[0] - f(z - h)[0]) / (2 * h)
        d2 = (f(z + h)[1] - f(z - h)[1]) / (2 * h)
        assert f(z)[1] == pytest.approx(d1, rel=1e-5) and f(z)[2] == pytest.approx(d2, rel=1e-4)


def test_the_layout_flags_the_measured_ttft_rows_then_leaves_the_priors_wide() -> None:
    nan = np.nan
    meas = [{"ttft_ms": np.array([1.0, nan, 2.0]), "tpot_ms": np.array([1.0, 1.0, 1.0]),
             "output_tok_s": np.array([nan, nan, nan])},
            {"ttft_ms": np.array([5.0]), "tpot_ms": np.array([nan]), "output_tok_s": np.array([9.0])}]
    want = [True, True, False, False, False, True, False, False, False]  # 2 TTFT, 3 TPOT | 1 TTFT, 1 tok/s | 2
    assert heavy_tailed(meas, 2).tolist() == want


def test_stalled_rows_do_not_move_the_terms() -> None:
    """One row in five with a TTFT 30x what the engine did (a client that stalled), and one in seven with a TPOT
    5x: the request terms come back within 2% of those that generated the clean rows, the bandwidth scale within
    3%, the per-layer time within 10%. Soft-L1 on every residual gave +10.5%, +6.5%, -4.9% and +10.9%."""
    rows = _synthetic(TRUE)
    rows = [r.model_copy(update={"ttft_ms": r.ttft_ms * 30}) if j % 5 == 0 else r for j, r in enumerate(rows)]
    rows = [r.model_copy(update={"tpot_ms": r.tpot_ms * 5}) if j % 7 == 3 else r for j, r in enumerate(rows)]
    _, buckets = prepare(rows)
    got = Calibrator(cv=False).fit(buckets[("h100-sxm", "vllm")]).terms_
    for name, rel in (("request_overhead_us", 0.02), ("bench_wave_share", 0.02), ("bw_scale", 0.03),
                      ("layer_overhead_us", 0.10)):
        assert getattr(got, name) == pytest.approx(getattr(TRUE, name), rel=rel), name
