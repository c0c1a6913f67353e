"""MTP speculative decoding (issue 14 item 5): tokens per step by closed form, its cost in the step, memory and
the command, and `rank --speculative auto` keeping it only where it wins."""

from __future__ import annotations

import json

import pytest

from advisor.catalog import lookup
from advisor.cost.speculative import PUBLISHED_ACCEPTANCE, acceptance_for, tokens_per_step

DSV3, MINIMAX, LLAMA8 = "deepseek-ai/DeepSeek-V3", "MiniMaxAI/MiniMax-M2.5", "meta-llama/Llama-3.1-8B"
H200 = ("--hw", "h200-sxm", "--tp", "8")


@pytest.mark.parametrize("k,a,want", [(0, 0.9, 1.0), (1, 0.85, 1.85), (2, 0.5, 1.75),
                                      (3, 0.85, 1 + .85 + .85**2 + .85**3), (4, 1.0, 5.0)])
def test_tokens_per_step_closed_form(k: int, a: float, want: float) -> None:
    assert tokens_per_step(k, a) == pytest.approx(want)


def test_acceptance_only_from_the_user_or_a_published_figure() -> None:
    assert acceptance_for(DSV3, None)[0] == 0.85 and "2412.19437" in PUBLISHED_ACCEPTANCE[DSV3][1]
    assert acceptance_for(MINIMAX, None)[0] is None
    assert acceptance_for(MINIMAX, 0.7) == (0.7, "--spec-acceptance")


def _predict(advisor, model: str, *args: str) -> dict:
    r = advisor("predict", model, *args, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_one_user_step_gains_at_most_the_expected_tokens(advisor) -> None:
    off = _predict(advisor, DSV3, *H200)
    on = _predict(advisor, DSV3, *H200, "--speculative", "mtp")
    e = tokens_per_step(1, 0.85)
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
