"""MTP speculative decoding (issue 14 item 5): tokens per step by closed form, its cost in the step, memory and
the command, and `rank --speculative auto` keeping it only where it wins."""

from __future__ import annotations

import json

import pytest

from advisor.catalog import lookup
from advisor.cost.speculative import PUBLISHED_ACCEPTANCE, acceptance_for, acceptance_length

DSV3, MINIMAX, LLAMA8 = "deepseek-ai/DeepSeek-V3", "MiniMaxAI/MiniMax-M2.5", "meta-llama/Llama-3.1-8B"
QWEN35 = "Qwen/Qwen3.5-397B-A17B"
H200 = ("--hw", "h200-sxm", "--tp", "8")


@pytest.mark.parametrize("k,a,want", [(0, 0.9, 1.0), (1, 0.85, 1.85), (2, 0.5, 1.75),
                                      (3, 0.85, 1 + .85 + .85**2 + .85**3), (4, 1.0, 5.0)])
def test_one_acceptance_extends_by_the_closed_form(k: int, a: float, want: float) -> None:
    # AL(1) = 1 + a alone: every further position is accepted with the same a, (1 - a^(k+1)) / (1 - a)
    assert acceptance_length(k, (1 + a,)) == pytest.approx(want)


def test_a_published_curve_is_read_where_published_and_extended_by_its_last_ratio() -> None:
    al = PUBLISHED_ACCEPTANCE[QWEN35][0]
    assert al[:3] == (1.93, 2.73, 3.39) and "golden_al_distribution/qwen3.5_mtp.yaml" in PUBLISHED_ACCEPTANCE[QWEN35][1]
    assert acceptance_length(3, al) == 3.39
    inc, ratio = al[7] - al[6], (al[7] - al[6]) / (al[6] - al[5])  # 0.17, 0.17 / 0.24
    assert acceptance_length(9, al) == pytest.approx(al[7] + inc * ratio)
    assert acceptance_length(10, al) == pytest.approx(al[7] + inc * ratio + inc * ratio**2)


def test_acceptance_only_from_the_user_or_a_published_figure() -> None:
    assert acceptance_for(DSV3, None)[0] == (1.85,) and "2412.19437" in PUBLISHED_ACCEPTANCE[DSV3][1]
    assert acceptance_for(MINIMAX, None)[0] is None
    assert acceptance_for(MINIMAX, 0.7) == ((1.7,), "--spec-acceptance")


def _predict(advisor, model: str, *args: str) -> dict:
    r = advisor("predict", model, *args, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_one_user_step_gains_at_most_the_expected_tokens(advisor) -> None:
    off = _predict(advisor, DSV3, *H200)
    on = _predict(advisor, DSV3, *H200, "--speculative", "mtp")
    e = acceptance_length(1, (1.85,))
    # verifying 2 positions and drafting 1 cost more than a plain step, so the gain is below E but real
    assert off["tpot_ms"] / e < on["tpot_ms"] < off["tpot_ms"]
    # the MTP layer is in memory: its bytes split over TP8
    mtp = lookup(DSV3).arch.mtp_bytes
    assert on["per_gpu"]["weights_bytes"] - off["per_gpu"]["weights_bytes"] == pytest.approx(mtp / 8, rel=1e-6)


def test_no_heads_or_no_acceptance_means_no_speculation(advisor) -> None:
    plain = _predict(advisor, LLAMA8, "--tp", "1")
    assert _predict(advisor, LLAMA8, "--tp", "1", "--speculative", "mtp")["tpot_ms"] == plain["tpot_ms"]
    mm = _predict(advisor, MINIMAX, "--tp", "4")
    assert _predict(advisor, MINIMAX, "--tp", "4", "--speculative", "mtp")["tpot_ms"] == mm["tpot_ms"]
    given = _predict(advisor, MINIMAX, "--tp", "4", "--speculative", "mtp", "--spec-acceptance", "0.7")
    assert given["tpot_ms"] < mm["tpot_ms"]


def test_rank_auto_keeps_speculation_where_it_wins_and_prints_its_flags(advisor) -> None:
    r = advisor("rank", DSV3, LLAMA8, "--hw", "h200-sxm", "--speculative", "auto", "--json")
    assert r.code == 0, r.err
    rows = {d["model"]: d for d in json.loads(r.out) if d["rank"]}
    d = rows[DSV3]
    assert d["spec_tokens"] == 1 and d["tokens_per_step"] == pytest.approx(1.85)
    assert "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'" in d["command"]
    assert "2412.19437" in d["spec_acceptance_source"]
    assert rows[LLAMA8]["spec_tokens"] == 0 and "--speculative-config" not in rows[LLAMA8]["command"]
    plain = {x["model"]: x for x in json.loads(advisor("rank", DSV3, "--hw", "h200-sxm", "--json").out) if x["rank"]}
    assert d["per_user_tok_s"] > plain[DSV3]["per_user_tok_s"]  # latency: it wins, so it is kept
    sg = advisor("rank", DSV3, "--hw", "h200-sxm", "--speculative", "mtp", "--engine", "sglang", "--json")
    (row,) = [x for x in json.loads(sg.out) if x["rank"]]
    assert "--speculative-algorithm EAGLE --speculative-num-steps 1 --speculative-eagle-topk 1 " \
           "--speculative-num-draft-tokens 2" in row["command"]


@pytest.mark.parametrize("args,words", [(("--speculative", "maybe"), ("--speculative",)),
                                        (("--spec-tokens", "2"), ("--spec-tokens", "need --speculative"))])
def test_bad_speculation_flags_are_one_line(advisor, args: tuple[str, ...], words: tuple[str, ...]) -> None:
    from conftest import assert_one_line

    assert_one_line(advisor("rank", DSV3, *args), *words)


def test_a_published_curve_sets_the_tokens_per_step_of_a_ranked_plan(advisor) -> None:
    # Qwen3.5-397B-A17B's published AL(3) = 3.39 (InferenceX golden curve): three drafts yield 3.39 tokens a step,
    # which costs more than a plain step (4 verified positions, 3 draft passes) but less than 3.39 of them
    on = advisor("rank", QWEN35, "--hw", "b200-sxm", "--speculative", "mtp", "--spec-tokens", "3", "--json")
    assert on.code == 0, on.err
    (d,) = [x for x in json.loads(on.out) if x["rank"] == 1]
    assert d["spec_tokens"] == 3 and d["tokens_per_step"] == pytest.approx(3.39)
    assert "qwen3.5_mtp.yaml" in d["spec_acceptance_source"]
    plan = ("--hw", "b200-sxm", "--tp", "8")
    off, mtp = _predict(advisor, QWEN35, *plan), _predict(advisor, QWEN35, *plan, "--speculative", "mtp",
                                                            "--spec-tokens", "3")
    assert 1 / 3.39 < mtp["tpot_ms"] / off["tpot_ms"] < 1
    assert (mtp["spec_tokens"], mtp["tokens_per_step"], off["spec_tokens"]) == (3, pytest.approx(3.39), 0)
    text = advisor("predict", QWEN35, *plan, "--speculative", "mtp", "--spec-tokens", "3")
    assert "speculation: 3 MTP drafts per step, 3.39 tokens per sequence per step" in " ".join(text.out.split())
