"""Issue #11 items 9-11, 16, 19: what `rank` and `predict` say is computed and true: limits no plan meets, the
cause of #1 beating #2, queueing, why a DP plan fits where plain TP does not, a borrowed calibration."""

from __future__ import annotations

import json
import re

MINIMAX, KIMI = "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"


def _json(advisor, *args: str) -> list[dict] | dict:
    r = advisor(*args, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


# --- item 9: a limit no plan meets -------------------------------------------------------------------------


def test_goodput_limit_no_plan_meets_is_said_with_the_closest_plan(advisor) -> None:
    rows = _json(advisor, "rank", MINIMAX, KIMI, "--objective", "goodput", "--max-tpot-ms", "0.001")
    ranked = [d for d in rows if d["rank"] is not None]
    assert len(ranked) == 2 and all(d["meets"] is False and d["score"] == 0 for d in ranked)
    closest = ranked[0]
    assert closest["miss"] == min(d["miss"] for d in ranked) and closest["miss"] > 1000  # 12 ms vs 0.001 ms
    assert closest["miss"] == closest["tpot_ms"] / 0.001
    r = advisor("rank", MINIMAX, KIMI, "--objective", "goodput", "--max-tpot-ms", "0.001")
    assert r.code == 0
    assert "no plan meets TPOT <= 0.001 ms up to 64 users; the closest is " \
           f"{closest['model']} ({closest['plan']['label']})" in r.out
    assert "beats" not in r.out and "infx" not in r.out
    runs = [ln for ln in r.out.splitlines() if ln.strip().startswith("run")]
    assert len(runs) == 1 and runs[0].strip().startswith("run (closest, misses the limits):")


def test_goodput_plans_that_meet_rank_before_those_that_miss(advisor) -> None:
    rows = _json(advisor, "rank", MINIMAX, KIMI, "--objective", "goodput", "--max-tpot-ms", "13")
    ranked = [d for d in rows if d["rank"] is not None]
    meets = [d["meets"] for d in ranked]
    assert meets == sorted(meets, reverse=True) and True in meets
    for d in ranked:
        assert (d["tpot_ms"] <= 13) == d["meets"] and (d["score"] > 0) == d["meets"]


# --- item 10: the comparison names the computed difference that matters most --------------------------------


def _compare_line(out: str) -> str:
    return next(ln for ln in out.splitlines() if " beats " in ln)


def test_goodput_comparison_names_users_admitted_when_they_differ_most(advisor) -> None:
    args = ("rank", MINIMAX, KIMI, "--objective", "goodput", "--max-tpot-ms", "30")
    first, second = [d for d in _json(advisor, *args) if d["rank"]]
    users = (first["deployment"]["running"], second["deployment"]["running"])  # every replica's
    assert users[0] / users[1] >= 2  # the plans differ more in users admitted than in any step term
    line = _compare_line(advisor(*args).out)
    assert f"the largest difference is users served within the limits: {users[0]:,} vs {users[1]:,}" in line
    ratio = first["score"] / second["score"]
    assert f"by {ratio:.2f}x on goodput" in line


def test_latency_comparison_names_the_step_term_that_differs_most(advisor) -> None:
    first, second = [d for d in _json(advisor, "rank", MINIMAX, KIMI) if d["rank"]]
    b1, b2 = first["breakdown_ms"], second["breakdown_ms"]
    step = sum(b1.values())
    # the term that would change #1's step most if it took #2's value
    top = max(b1, key=lambda k: abs((step + b2[k] - b1[k]) / step - 1))
    words = {"weights": "reading weights", "kv": "reading KV cache", "compute": "compute",
             "comm": "communication", "overhead": "fixed latency (kernel floors, per-layer and per-step time)"}
    line = _compare_line(advisor("rank", MINIMAX, KIMI).out)
    assert f"the largest difference is {words[top]}: {b1[top]:.1f} vs {b2[top]:.1f} ms per decode step" in line
    assert "users" not in line.split("(then")[0]  # one user each: not a cause


# --- item 11: queueing is said, with how many run --------------------------------------------------------------


def test_predict_says_how_many_run_and_how_many_queue(advisor) -> None:
    d = _json(advisor, "predict", MINIMAX, "--tp", "4", "--concurrency", "1024")
    running, queued = d["running_sequences"], d["queued_requests"]
    assert 0 < running < 1024 and queued == 1024 - running
    kv_room_seqs = d["kv_cache_tokens"] // 1536  # paged: 1024 in + on average half of the 1024 out
    assert running == kv_room_seqs
    assert d["queueing"].startswith(f"{running:,} of 1,024 users run at once (KV cache room for {running:,} "
                                    "sequences of 1,536 tokens on average (prompt + output so far, paged) per DP "
                                    "rank); ")
    assert f"{queued:,} wait in the queue" in d["queueing"]
    human = advisor("predict", MINIMAX, "--tp", "4", "--concurrency", "1024").out
    assert f"queueing: {running:,} of 1,024 users run at once" in human and f"({running:,} running)" in human
    calm = _json(advisor, "predict", MINIMAX, "--tp", "4", "--concurrency", "8")
    assert calm["queued_requests"] == 0 and calm["queueing"] is None


def test_queueing_at_the_engines_max_num_seqs(advisor) -> None:
    d = _json(advisor, "predict", MINIMAX, "--tp", "4", "--concurrency", "2048", "--input-len", "16",
              "--output-len", "16")
    assert d["running_sequences"] == 1024 and d["queued_requests"] == 1024
    assert "(vLLM's max_num_seqs 1024 per DP rank)" in d["queueing"]


def test_rank_why_says_requests_queue(advisor) -> None:
    (d,) = [x for x in _json(advisor, "rank", MINIMAX, "--objective", "throughput", "--concurrency", "4096")
            if x["rank"]]
    assert d["queued_requests"] > 0 and d["queueing"] in d["why"]


# --- item 16: why a TP+DP plan fits where plain TP did not ----------------------------------------------------


def test_dp_plan_explains_expert_sharding_over_tp_x_dp(advisor) -> None:
    (d,) = [x for x in _json(advisor, "rank", KIMI, "--objective", "throughput", "--concurrency", "128")
            if x["rank"]]
    p = d["plan"]
    assert p["dp"] > 1, "the case this test is about: a TP+DP plan chosen"
    note = next(c for c in d["constraints"] if c.startswith(f"TP{p['tp']}:"))
    assert re.search(r"weights [\d.]+ GiB per GPU alone exceed", note)  # the term that tips it
    assert (f"{p['label']} fits because with DP the experts are sharded over TP x DP = {p['tp'] * p['dp']} GPUs"
            in note)


def test_dp_plan_says_the_prefills_its_lockstepped_ranks_wait_for(advisor) -> None:
    # MiniMax-M2.5 at 64 users on TP2+DP4+EP8, whose DP ranks step together (cost/serving.py: _lockstep)
    (d,) = [x for x in _json(advisor, "rank", MINIMAX, "--objective", "throughput", "--concurrency", "64",
                             "--all-plans") if x["plan"]["label"] == "TP2+DP4+EP8"]
    held = d["tpot_ms"] - sum(d["breakdown_ms"].values())
    assert held >= 0.1 * d["tpot_ms"]
    assert (f"other requests' prefills add {held:.1f} ms per output token (its DP ranks step together: a prompt "
            "on any rank holds all)") in d["why"]
    p = d["plan"]
    args = ("predict", MINIMAX, "--tp", str(p["tp"]), "--dp", str(p["dp"]), "--ep", str(p["ep"]), "--concurrency", "64")
    r, j = advisor(*args), _json(advisor, *args)
    assert r.code == 0 and (f"  other requests' prefills add {j['prefill_interference_ms']:.1f} ms per output token "
                            "(its DP ranks step together") in r.out


# --- item 19: a borrowed calibration says its error is another box's -----------------------------------------


def test_a_gpu_never_measured_says_its_terms_are_engine_wide(advisor) -> None:
    # no H200 row was ever measured: the engine-wide vLLM terms and the H200's own spec sheet, said so, with the
    # error of predicting a GPU held out of the fit
    (d,) = [x for x in _json(advisor, "rank", MINIMAX, "--hw", "h200-sxm") if x["rank"]]
    cal = d["calibrated"]
    assert cal["rows"] == 0 and "no measurements for h200-sxm" in cal["how"]
    assert cal["how"].startswith("engine-wide vllm terms (pooled over ")
    out = advisor("rank", MINIMAX, "--hw", "h200-sxm").out
    line = next(ln for ln in out.splitlines() if ln.startswith("calibrated:"))
    pct = cal["cv"]["tpot_ms"]["median_abs_pct"]
    assert line.startswith(f"calibrated: {cal['how']}; held-out median TPOT error for a GPU never measured: "
                           f"{pct:.0f}%")
    own = advisor("rank", MINIMAX).out
    assert "no measurements" not in own and "calibrated: shipped: vllm terms pooled" in own


# --- item 17: commands are never wrapped; the table drops columns instead of splitting numbers ----------------


def _run_lines(d: dict) -> set[str]:
    """The printed lines of a row's command: the first after "run: ", the others (a deployment's further
    launches) as they are."""
    first, *more = d["command"].splitlines()
    return {f"   run: {first}", *more}


def _rows_and_text(advisor, columns: int, *args: str) -> tuple[list[dict], str]:
    docs = [d for d in _json(advisor, "rank", *args) if d["rank"]]
    r = advisor("rank", *args, columns=columns)
    assert r.code == 0, r.err
    return docs, r.out


def test_at_80_columns_commands_stay_on_one_line_and_numbers_whole(advisor) -> None:
    args = (MINIMAX, KIMI, "--objective", "throughput", "--concurrency", "128")
    docs, out = _rows_and_text(advisor, 80, *args)
    lines = out.splitlines()
    for d in docs:
        assert _run_lines(d) <= set(lines)  # the whole command, each of its lines whole
        row = next(ln for ln in lines if ln.startswith(f"│ {d['rank']} │"))
        total = d["deployment"]["output_tok_s"]  # the table's total is the whole deployment's
        assert f"{total:,.0f}" in row and d["plan"]["label"] in row
        # the title's score and quality scale stay; TPOT where room is left (its column named as left out if not)
        left = next(ln for ln in lines if ln.startswith("(columns left out"))
        assert f"{d['quality']:g}" in row and (f"{d['tpot_ms']:,.1f}" in row or "TPOT ms" in left)
    table = [ln for ln in lines if ln.startswith(("┏", "┃", "┡", "│", "└"))]
    assert table and max(len(ln) for ln in table) <= 80
    assert any(ln.startswith("(columns left out to fit 80 characters: ") for ln in lines)
    wide = _rows_and_text(advisor, 250, *args)[1]
    assert "columns left out" not in wide and "coll/step" in wide


def test_piped_rank_output_keeps_commands_whole(empty_hf_home) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "ADVISOR_DEBUG")}
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(empty_hf_home))
    r = subprocess.run([sys.executable, "-m", "advisor.cli", "rank", MINIMAX, KIMI], capture_output=True,
                       text=True, env=env, timeout=300)
    j = subprocess.run([sys.executable, "-m", "advisor.cli", "rank", MINIMAX, KIMI, "--json"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0 and j.returncode == 0
    for d in json.loads(j.stdout):
        assert _run_lines(d) <= set(r.stdout.splitlines())
