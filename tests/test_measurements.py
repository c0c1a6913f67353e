"""Measurement input of the calibration room: §3.4 CSV, vLLM bench JSON, public.csv cleaning."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import CASE_STUDY
from pydantic import ValidationError

from advisor.calibrate.measurements import Measurement, Rejected, benchmark_concurrency, build_row
from advisor.calibrate.predict_table import predict_rows
from advisor.calibrate.rowtable import read_measurements
from advisor.errors import AdvisorError
from advisor.hardware import known_ids
from research import public

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "bench"


def _raw_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


# ------------------------------------------------------------------ real files


def test_case_study_parses_all_four_rows() -> None:
    result = read_measurements(CASE_STUDY)
    assert result.rejected == []
    assert [m.row for m in result.rows] == [1, 2, 3, 4]
    kimi_single, kimi_128, minimax_single, minimax_ep8 = result.rows
    assert kimi_single.model == "nvidia/Kimi-K2.5-NVFP4"
    assert (kimi_single.tp, kimi_single.concurrency, kimi_single.output_tok_s) == (8, 1, 61.0)
    assert kimi_single.input_len is None and kimi_single.output_len == 512
    assert kimi_single.tpot_ms == pytest.approx(16.4)
    assert kimi_128.concurrency == 128 and kimi_128.output_tok_s == 1239.0
    assert kimi_128.tpot_ms is None and kimi_128.ttft_ms is None and kimi_128.output_len is None
    assert (minimax_single.tp, minimax_single.output_tok_s) == (4, 84.0)
    assert (minimax_ep8.tp, minimax_ep8.ep, minimax_ep8.output_tok_s) == (8, 8, 4000.0)
    assert {m.hardware for m in result.rows} == {"rtx-pro-6000-server"}
    assert {m.weight_dtype for m in result.rows} == {None}  # empty = the checkpoint's own
    assert all(m.source.startswith("case study") for m in result.rows)


def test_silicon_dev_reads_zero_parallel_sizes_as_not_used(bench_dir: Path) -> None:
    path = bench_dir / "silicon_dev.csv"
    raw = _raw_rows(path)
    zero_rows = {i for i, r in enumerate(raw, start=1) if "0" in (r["dp"], r["ep"])}
    result = read_measurements(path)
    assert len(raw) == 1444
    assert len(zero_rows) == 19  # aiconfigurator "epnone" rows converted as ep=0 (and dp=0)
    assert result.rejected == []
    assert len(result.rows) == 1444
    zero = [m for m in result.rows if m.row in zero_rows]
    assert len(zero) == 19 and all(m.dp >= 1 and m.ep == 1 for m in zero)
    assert {m.engine for m in result.rows} == {"vllm", "sglang", "trtllm"}
    assert all(m.ttft_ms and m.tpot_ms and m.output_tok_s is None for m in result.rows)
    first = result.rows[0]
    assert (first.model, first.hardware, first.tp, first.ep, first.concurrency) == (
        "Qwen/Qwen3.5-397B-A17B",
        "b300-sxm",
        2,  # the id's `cfg736` run is TP2 x EP2 (the source's tp_size 4 was TP x EP; see tests/data/bench/README.md)
        2,
        32,
    )
    assert (first.input_len, first.output_len, first.tpot_ms) == (8192, 1024, 17.5058)


def test_silicon_dev_marks_the_speculative_campaigns_and_only_them(bench_dir: Path) -> None:
    # tests/data/bench/README.md: InferenceX's dsr1-{fp8,fp4}-b200-trt-mtp configs were the only ones on TRT-LLM
    # 1.2.0rc6.post3, and the only B200 DeepSeek TRT-LLM ones swept on 2026-01-14 (1.1.0rc2.post2, PR #392) (MTP 3,
    # 1 with attention-DP); qwen3.5-fp8-b200-sglang-mtp ran TP4 EP1 with 3 EAGLE steps
    rows = read_measurements(bench_dir / "silicon_dev.csv").rows
    spec = [m for m in rows if m.spec_tokens]
    assert len(spec) == 124
    trt = [m for m in spec if m.engine == "trtllm"]
    assert len(trt) == 71 and {m.model for m in trt} == {"deepseek-ai/DeepSeek-R1"}
    assert all(m.spec_tokens == (1 if m.dp > 1 else 3) for m in trt)
    assert Counter(m.engine_version for m in trt) == {"1.2.0rc6.post3": 47, "1.1.0rc2.post2": 24}
    assert not [m for m in rows if m.engine_version == "1.2.0rc6.post3" and not m.spec_tokens]
    qwen = [m for m in spec if m.engine == "sglang" and m.model == "Qwen/Qwen3.5-397B-A17B"]
    assert len(qwen) == 30 and all((m.weight_dtype, m.tp, m.ep, m.spec_tokens) == ("fp8", 4, 1, 3) for m in qwen)
    assert len([m for m in qwen if m.hardware == "b300-sxm"]) == 9
    # dsr1-fp8-b200-sglang-mtp (EAGLE, 2 steps): the points the plain config's search space does not hold, and of
    # each point both configs ran, the run with the lower TPOT (and, in each of the 10 pairs, the higher TTFT)
    r1 = [m for m in spec if m.engine == "sglang" and m.model == "deepseek-ai/DeepSeek-R1"]
    assert len(r1) == 23 and all(m.tp == 8 and m.spec_tokens == 2 for m in r1)
    assert len([m for m in r1 if m.concurrency <= (4 if m.input_len == 8192 else 64)]) == 10
    plain = {(m.input_len, m.output_len, m.concurrency): m for m in rows if m.engine == "sglang" and m.tp == 8
             and m.model == "deepseek-ai/DeepSeek-R1" and m.weight_dtype == "fp8" and m.engine_version == "0.5.9"
             and not m.spec_tokens}
    for m in r1:
        twin = plain.get((m.input_len, m.output_len, m.concurrency))
        if m.concurrency <= (4 if m.input_len == 8192 else 64):
            assert twin is not None and m.tpot_ms < twin.tpot_ms and m.ttft_ms > twin.ttft_ms
    # the InferenceX scripts' FP8 KV cache (README: kv_cache_dtype), on the same campaigns
    fp8_kv = [m for m in rows if m.kv_cache_dtype == "fp8"]
    assert len(fp8_kv) == 796
    assert len([m for m in fp8_kv if m.model == "meta-llama/Llama-3.1-70B"]) == 254  # every Llama-3.1-70B row
    # B300 SGLang v0.5.10.post1 (dsr1_fp{8,4}_b300.sh, qwen3.5_fp{8,4}_b300.sh pass fp8_e4m3; Qwen3.5 BF16 none)
    b300 = [m for m in rows if m.hardware == "b300-sxm" and m.engine_version == "0.5.10.post1"]
    assert sorted({(m.weight_dtype, m.kv_cache_dtype) for m in b300}) == [("bf16", None), ("fp8", "fp8"),
                                                                           ("nvfp4", "fp8")]
    assert len([m for m in b300 if m.kv_cache_dtype == "fp8"]) == 47
    assert len([m for m in fp8_kv if m.model == "openai/gpt-oss-120b" and m.hardware == "b200-sxm"]) == 121
    auto = [m for m in rows if m.kv_cache_dtype == "auto"]  # gpt-oss on H100 (and B200 before 2025-12-08): no flag
    assert len(auto) == 44 and {m.model for m in auto} == {"openai/gpt-oss-120b"}
    # length_ratio (README): InferenceX's --random-range-ratio 0.8, aiperf fixed lengths for the gap-analysis runs
    ratio = {v: [m for m in rows if m.length_ratio == v] for v in (0.8, 1.0, None)}
    assert [len(ratio[v]) for v in (0.8, 1.0, None)] == [879, 563, 2]
    assert all("_gap_analysis_" in m.source for m in ratio[None])
    # top_p (README): Qwen3-32B's generation config (0.95), which vLLM applies to aiperf's requests (they carry
    # none); the InferenceX client sends temperature 0 (greedy)
    nucleus = [m for m in rows if m.top_p is not None]
    assert len(nucleus) == 79 and {(m.model, m.engine, m.top_p, m.length_ratio) for m in nucleus} == {
        ("Qwen/Qwen3-32B", "vllm", 0.95, 1.0)}
    # batch waiting (README): the InferenceX Llama-3.1-70B TRT-LLM scripts at 1k/1k below TP8, and DeepSeek-R1 FP8
    # at 1k/1k from 64 users (one run labelled DeepSeek-V3)
    wait = [m for m in rows if m.batch_wait_iters]
    assert sorted({(m.model, m.batch_wait_iters, m.batch_wait_ratio) for m in wait}) == [
        ("deepseek-ai/DeepSeek-R1", 40, 0.8), ("deepseek-ai/DeepSeek-V3", 40, 0.8),
        ("meta-llama/Llama-3.1-70B", 20, 0.9)]
    assert sorted(m.concurrency for m in wait if m.batch_wait_iters == 40) == [64, 128]
    llama = [m for m in wait if m.batch_wait_iters == 20]
    assert len(llama) == 33 and all((m.engine, m.hardware, m.input_len, m.output_len) ==
                                    ("trtllm", "b200-sxm", 1024, 1024) and m.tp < 8 for m in llama)
    assert len(wait) == 35 and not [m for m in rows if m.batch_wait_ratio and not m.batch_wait_iters]
    # SGLang --scheduler-recv-interval (README): 10 below 16 users and 30 from 16 in the InferenceX DeepSeek and
    # Qwen3.5 scripts (10 at any load for DeepSeek FP8 at TP4 and Qwen3.5 FP8 on B300); GLM-5's pass none
    polled = [m for m in rows if m.recv_interval > 1]
    assert len(polled) == 273 and {m.engine for m in polled} == {"sglang"}
    assert all(m.recv_interval == (30 if m.concurrency >= 16 else 10) for m in polled
               if m.tp == 8 and m.hardware == "b200-sxm")
    assert not [m for m in rows if "GLM-5" in m.model and m.recv_interval > 1]
    assert {m.recv_interval for m in rows if m.hardware == "h100-sxm"} == {1}
    # attention_dp_config (README): every TensorRT-LLM attention-DP row; DeepSeek's scripts 60/0, gpt-oss's defaults
    balanced = [m for m in rows if m.adp_timeout_iters]
    assert {(m.engine, m.dp > 1) for m in balanced} == {("trtllm", True)}
    assert len(balanced) == len([m for m in rows if m.engine == "trtllm" and m.dp > 1]) == 45
    assert {(m.model.split("/")[0], m.adp_timeout_iters, m.adp_batching_wait_iters) for m in balanced} == {
        ("deepseek-ai", 60, 0), ("openai", 50, 10)}
    # --mem-fraction-static (README): every InferenceX SGLang row; DeepSeek-R1 FP8 at TP4 ran 0.95
    frac = [m for m in rows if m.mem_fraction is not None]
    assert len(frac) == 307 and {m.engine for m in frac} == {"sglang"}
    assert {m.mem_fraction for m in frac if m.model == "deepseek-ai/DeepSeek-R1" and m.weight_dtype == "fp8"
            and m.tp == 4} == {0.95}
    h100 = {m.engine for m in ratio[1.0] if m.hardware == "h100-sxm"}
    assert h100 == {"sglang", "trtllm", "vllm"} and not [m for m in ratio[0.8] if m.engine == "sglang" and
                                                         m.hardware == "h100-sxm"]


def test_known_model_and_hardware_callbacks_reject_rows(bench_dir: Path) -> None:
    def known_hw(hw: str) -> bool:
        if hw == "gb200":
            raise AdvisorError("hwprofiles/gb200.toml: no such profile")
        return True

    result = read_measurements(
        bench_dir / "silicon_dev.csv",
        known_models=lambda m: m != "zhipuai/GLM-5",
        known_hardware=known_hw,
    )
    reasons = [r.reason for r in result.rejected]
    assert sum("unknown model 'zhipuai/GLM-5'" in r for r in reasons) == 34
    assert any("unknown hardware 'gb200': hwprofiles/gb200.toml" in r for r in reasons)
    assert all(m.model != "zhipuai/GLM-5" and m.hardware != "gb200" for m in result.rows)


# ------------------------------------------------------------------ row validation


def test_mixed_csv_keeps_good_rows_and_rejects_bad_ones_with_row_numbers() -> None:
    result = read_measurements(FIXTURES / "mixed_rows.csv")
    assert [m.row for m in result.rows] == [1, 6]
    first, partial = result.rows
    assert (first.engine, first.weight_dtype, first.tpot_ms, first.output_tok_s) == (
        "vllm",
        "fp8",
        11.9,
        84.0,
    )
    assert (partial.engine, partial.weight_dtype, partial.output_len) == ("sglang", "nvfp4", None)
    assert (partial.pp, partial.dp, partial.ep) == (1, 1, 1)
    reasons = {r.row: r.reason for r in result.rejected}
    assert sorted(reasons) == [2, 3, 4, 7, 8, 9]
    assert "tpot_ms='-3.5' must be a finite number > 0" in reasons[2]
    assert "concurrency='fast' is not a number" in reasons[3]
    assert "tp='0' must be >= 1" in reasons[4]
    assert "no measured value" in reasons[7]
    assert "weight_dtype 'fp16'" in reasons[8] and "ttft_ms='0' must be" in reasons[8]
    assert "hardware is empty" in reasons[9] and "engine 'ollama'" in reasons[9]
    assert result.rejected[0].raw["tpot_ms"] == "-3.5"


def test_every_bad_cell_is_named_in_one_line_and_spreadsheet_integers_are_read() -> None:
    cells = {"model": "m/x", "hardware": "h100-sxm", "tp": "x", "pp": "0", "dp": "2.5", "concurrency": "inf",
             "ttft_ms": "-3", "tpot_ms": "nan", "output_tok_s": "fast"}
    bad = build_row(cells, file="f.csv", row=7)
    assert isinstance(bad, Rejected) and bad.row == 7 and bad.raw == cells
    assert bad.reason == (
        "tp='x' is not a number; pp='0' must be >= 1 (write 1, or leave empty, when not used); "
        "dp='2.5' is not an integer; concurrency='inf' is not an integer; ttft_ms='-3' must be a finite number > 0; "
        "tpot_ms='nan' must be a finite number > 0; output_tok_s='fast' is not a number"
    )
    good = build_row({**cells, "tp": "8.0", "pp": "", "dp": "0", "concurrency": "1e2", "ttft_ms": " 95.5 ",
                      "tpot_ms": "", "output_tok_s": ""}, file="f.csv", row=8)
    assert isinstance(good, Measurement)
    assert (good.tp, good.pp, good.dp, good.concurrency, good.ttft_ms) == (8, 1, 1, 100, 95.5)
    assert good.source == "f.csv row 8" and good.tpot_ms is None


def test_defaults_fill_empty_cells_and_unknown_default_keys_fail() -> None:
    result = read_measurements(FIXTURES / "mixed_rows.csv", defaults={"hardware": "h100-sxm"})
    row9 = [r for r in result.rejected if r.row == 9][0]
    assert "hardware is empty" not in row9.reason and "engine 'ollama'" in row9.reason
    with pytest.raises(AdvisorError, match="defaults: unknown field"):
        read_measurements(FIXTURES / "mixed_rows.csv", defaults={"gpu": "h100"})


def test_measurement_normalises_dtype_and_engine_and_is_frozen() -> None:
    base = {
        "model": "m/x",
        "hardware": "h100-sxm",
        "concurrency": 1,
        "tpot_ms": 10.0,
        "source": "test",
        "row": 1,
        "file": "f.csv",
    }
    for spelling, dtype in [
        ("FP8", "fp8"),
        ("fp4", "nvfp4"),
        ("NVFP4", "nvfp4"),
        ("FP4", "nvfp4"),
        ("bfloat16", "bf16"),
        ("MXFP4", "mxfp4"),
        ("INT4", "int4"),
    ]:
        assert Measurement(**base, weight_dtype=spelling).weight_dtype == dtype
    assert Measurement(**base, engine="TensorRT-LLM").engine == "trtllm"
    with pytest.raises(ValidationError):
        Measurement(**base, weight_dtype="fp16")
    with pytest.raises(ValidationError):
        Measurement(**{**base, "tpot_ms": None})
    with pytest.raises(ValidationError):
        Measurement(**base, tp=0)
    m = Measurement(**base)
    with pytest.raises(ValidationError):
        m.tp = 2  # type: ignore[misc]


# ------------------------------------------------------------------ whole-file problems


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "file is empty"),
        (b"  \n\n", "file is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
        (b"model;hardware\xff\xfe;tp", "not UTF-8"),
        (b'[1, "a", null, {"x": 1}]', "not a vLLM `bench serve` result"),
        (b'{"mean_ttft_ms": 1', "not valid JSON"),
        (b"model,hardware,engine\nx,y,vllm\n", "missing column(s) tp, concurrency"),
        (b"just some prose, not a table\n", "missing column(s) model, hardware, tp, concurrency"),
    ],
)
def test_garbage_files_raise_one_line_naming_the_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "measurements.csv"
    path.write_bytes(content)
    with pytest.raises(AdvisorError) as info:
        read_measurements(path)
    text = str(info.value)
    assert str(path) in text and message in text and "\n" not in text


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(AdvisorError, match="not found"):
        read_measurements(tmp_path / "nope.csv")
    with pytest.raises(AdvisorError, match="not a file"):
        read_measurements(tmp_path)


def test_type_is_detected_by_content_and_bom_is_tolerated(tmp_path: Path) -> None:
    csv_as_json = tmp_path / "really_csv.json"
    csv_as_json.write_bytes(b"\xef\xbb\xbfModel, Hardware ,tp,concurrency,tpot_ms\nm/x,h100-sxm,2,4,12.5\n")
    rows = read_measurements(csv_as_json).rows
    assert [(m.model, m.hardware, m.tp, m.concurrency, m.tpot_ms) for m in rows] == [
        ("m/x", "h100-sxm", 2, 4, 12.5)
    ]
    json_as_txt = tmp_path / "bench.txt"
    json_as_txt.write_text((FIXTURES / "vllm_bench_serve.json").read_text())
    assert len(read_measurements(json_as_txt).rows) == 1


def test_misaligned_csv_row_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("model,hardware,tp,concurrency,tpot_ms\nm/x,h100-sxm,2,4,12.5\nm/x,h100-sxm,2,4,1,2,3\n")
    result = read_measurements(path)
    assert [m.row for m in result.rows] == [1]
    assert result.rejected[0].row == 2 and "7 cells but the header has 5" in result.rejected[0].reason


# ------------------------------------------------------------------ vLLM bench JSON


def test_vllm_bench_json_fixture() -> None:
    path = FIXTURES / "vllm_bench_serve.json"
    doc = json.loads(path.read_text())
    result = read_measurements(path, defaults={"engine": "vllm", "hardware": "h100-sxm", "tp": 8})
    assert result.rejected == []
    (m,) = result.rows
    assert m.model == doc["model_id"] == "MiniMaxAI/MiniMax-M2.5"
    assert m.hardware == "rtx-pro-6000-server"  # --metadata in the file wins over defaults
    assert m.tp == 4 and m.engine == "vllm"
    assert m.concurrency == doc["max_concurrency"] == 32
    assert m.input_len == doc["total_input_tokens"] / doc["completed"] == 1024
    assert m.output_len == doc["total_output_tokens"] / doc["completed"] == 512
    assert (m.ttft_ms, m.tpot_ms, m.output_tok_s) == (412.5, 28.7, 1088.6)
    assert m.row == 1 and "vllm_bench_serve.json #1" in m.source and "date=20260301-120000" in m.source


def test_vllm_bench_jsonl_rows_and_rejections() -> None:
    path = FIXTURES / "vllm_bench_append.jsonl"
    bare = read_measurements(path)
    assert bare.rows == [] and all("hardware is empty" in r.reason for r in bare.rejected[:3])
    result = read_measurements(path, defaults={"hardware": "rtx-pro-6000-server", "tp": 8, "engine": "vllm"})
    by_row = {m.row: m for m in result.rows}
    assert sorted(by_row) == [1, 2]
    assert by_row[1].concurrency == 8 and by_row[1].input_len == 1025  # 65600 / 64
    assert by_row[2].concurrency == 16  # request_rate inf, no cap: all 16 prompts at once
    reasons = {r.row: r.reason for r in result.rejected}
    assert "concurrency is empty" in reasons[3]  # open loop at 2 req/s: concurrency unknown
    assert "speculative decoding was on (acceptance length 2.4) but its drafted tokens per step" in reasons[4]
    assert "no completed requests" in reasons[5]
    with_conc = read_measurements(
        path, defaults={"hardware": "rtx-pro-6000-server", "tp": 8, "concurrency": 4}
    )
    assert {m.row: m.concurrency for m in with_conc.rows} == {1: 8, 2: 16, 3: 4}


def test_vllm_bench_json_with_speculative_decoding_carries_its_drafts_and_acceptance(tmp_path: Path) -> None:
    # `vllm bench serve` adds spec_decode_* when the server drafted: 2,400 drafts of 3 tokens, 1 + 3,360 / 2,400
    # = 2.4 tokens per verify step (vllm/v1/spec_decode/metrics.py: mean acceptance length, bonus token included)
    doc = json.loads((FIXTURES / "vllm_bench_serve.json").read_text())
    doc.update(model_id="deepseek-ai/DeepSeek-V3", hardware="h200-sxm", tp=8, spec_decode_num_drafts=2400,
               spec_decode_draft_tokens=7200, spec_decode_accepted_tokens=3360, spec_decode_acceptance_length=2.4)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc))
    (m,) = read_measurements(path).rows
    assert (m.spec_tokens, m.spec_accept_len) == (3, 2.4)
    (p,) = predict_rows([m])
    assert p.reason is None and p.predicted is not None
    # without the draft counts the drafts per step come from the object's own spec_tokens, else it says so
    for key in ("spec_decode_num_drafts", "spec_decode_draft_tokens"):
        del doc[key]
    path.write_text(json.dumps(doc))
    assert "drafted tokens per step are not in the file" in read_measurements(path).rejected[0].reason
    path.write_text(json.dumps({**doc, "spec_tokens": 2}))
    assert [(m.spec_tokens, m.spec_accept_len) for m in read_measurements(path).rows] == [(2, 2.4)]


def test_json_array_with_some_junk_rejects_the_junk(tmp_path: Path) -> None:
    good = json.loads((FIXTURES / "vllm_bench_serve.json").read_text())
    path = tmp_path / "results.json"
    path.write_text(json.dumps([good, 42, {"foo": "bar"}, {**good, "mean_tpot_ms": "fast"}]))
    result = read_measurements(path)
    assert [m.row for m in result.rows] == [1]
    reasons = {r.row: r.reason for r in result.rejected}
    assert reasons[2] == "not a JSON object"
    assert reasons[3].startswith("not a bench-serve result")
    assert "tpot_ms='fast' is not a number" in reasons[4]


# ------------------------------------------------------------------ public.csv cleaning


@pytest.fixture(scope="module")
def cleaned(bench_dir: Path) -> tuple[list[dict[str, str]], public.CleanResult]:
    raw = public.read_public(bench_dir / "public.csv")
    return raw, public.clean_public(raw)


def test_public_clean_keeps_only_rows_with_stated_conditions(cleaned) -> None:
    raw, result = cleaned
    assert len(raw) == 763
    assert len(result.kept) + len(result.dropped) == len(raw)
    for row in result.kept:
        assert row["concurrency"].isdigit() and row["tp"].isdigit()
        assert row["input_len"].isdigit() and row["output_len"].isdigit()
        assert any(row[k] for k in ("ttft_ms", "tpot_ms", "output_tok_s"))
        assert row["engine"] in {"vllm", "sglang", "trtllm"}
    no_concurrency = sum(1 for r in raw if not r["concurrency"].strip().isdigit())
    assert result.summary()["concurrency"] == no_concurrency


def test_public_clean_rtx_pro_6000_rows(cleaned) -> None:
    raw, result = cleaned
    rtx = [r for r in result.kept if r["hardware"] == "rtx-pro-6000-server"]
    assert len(rtx) == 27
    row690 = [r for r in rtx if "public.csv row 690 " in r["source"] + " "][0]
    assert raw[689]["output_tok_s_total"] == "2294"
    assert (row690["model"], row690["engine"], row690["tp"], row690["concurrency"]) == (
        "nvidia/Qwen3.5-397B-A17B-NVFP4",
        "vllm",
        "4",
        "128",
    )
    assert (row690["input_len"], row690["output_len"], row690["output_tok_s"]) == ("1", "512", "2294")
    assert row690["weight_dtype"] == "nvfp4" and "recorded as 1" in row690["source"]
    # speculative-decoding rows (MTP ON) are never kept
    mtp_on = {i for i, r in enumerate(raw, start=1) if "MTP ON" in r["source"] or "MTP on" in r["notes"]}
    kept_numbers = {int(r["source"].split("public.csv row ")[1].split(" ")[0]) for r in result.kept}
    assert mtp_on and not (mtp_on & kept_numbers)


def test_public_clean_output_reads_back_without_rejections(cleaned, tmp_path: Path) -> None:
    _, result = cleaned
    out = tmp_path / "public_clean.csv"
    public.write_csv(result.kept, out)
    back = read_measurements(out)
    assert back.rejected == [] and len(back.rows) == len(result.kept)
    assert {m.hardware for m in back.rows} <= set(known_ids())  # every kept row names a shipped profile
    assert [p.name for p in tmp_path.iterdir()] == ["public_clean.csv"]  # no temp file left


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("RTX PRO 6000 Blackwell Server Edition (98GB each)", "rtx-pro-6000-server"),
        ("RTX PRO 6000 Blackwell Workstation Edition (PCIe 5, no NVLink)", "rtx-pro-6000-ws"),
        ("B200 180GB (DGX B200)", "b200-sxm"),
        ("B200-SXM-180GB", "b200-sxm"),
        ("GB200 192GB (NVL72)", "gb200"),
        ("GB300 288GB (NVL72) [beta]", "gb300"),
        ("B300 288GB (DGX B300) [beta]", "b300-sxm"),
        ("H200 (AWS p5e.48xlarge)", "h200-sxm"),
        ("H100 SXM 80GB (DGX H100)", "h100-sxm"),
        ("AMD MI300X 192GB (2x EPYC 9374F host)", "mi300x"),
    ],
)
def test_map_hardware(text: str, expected: str) -> None:
    assert public.map_hardware(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "RTX PRO 6000 Blackwell Max-Q Workstation",
        "RTX PRO 6000 Blackwell (8x, voipmonitor rig)",
        "H100 (single GPU)",
        "DGX Spark (GB10, unified LPDDR5X memory)",
        "H800",
        "H20",
        "RTX 5090 (PCIe x8 lanes, Ryzen 9 9950X3D, no NVLink)",
    ],
)
def test_map_hardware_drops_unmapped(text: str) -> None:
    with pytest.raises(public.Drop, match="hardware"):
        public.map_hardware(text)


def test_public_field_parsers() -> None:
    assert public.parse_length("output_len", "512 (max_tokens)") == (512, "output_len 512 (max_tokens)")
    assert public.parse_length("input_len", "~20000 (±15%)")[0] == 20000
    assert public.parse_length("input_len", "1024") == (1024, "")
    for bad in ("MLPerf dataset (variable)", "", "variable"):
        with pytest.raises(public.Drop):
            public.parse_length("input_len", bad)
    assert public.map_precision("FP4")[0] == "nvfp4"
    assert public.map_precision("FP8 (native)")[0] == "fp8"
    assert public.map_precision("MXFP4 MoE weights, FP8 KV cache") == (
        "mxfp4",
        "precision MXFP4 MoE weights, FP8 KV cache",
    )
    assert (
        public.map_precision("native checkpoint (INT4 experts per model card; not stated in recipe)")[0] == ""
    )
    with pytest.raises(public.Drop):
        public.map_precision("MXFP8")
    assert public.map_engine("SGLang (lukealonso fork)", "not stated") == ("sglang", "[lukealonso fork]")
    assert public.map_engine("TensorRT-LLM", "1.2") == ("trtllm", "1.2")
    with pytest.raises(public.Drop):
        public.map_engine("SlimServe (custom engine)", "")
    assert public.map_model("Qwen3.5-397B-A17B", "nvidia/DeepSeek-R1-0528-NVFP4 (NVFP4 GEMMs)", "")[0] == (
        "nvidia/DeepSeek-R1-0528-NVFP4"
    )
    assert (
        public.map_model(
            "Qwen3.5-397B-A17B", "(NVFP4 checkpoint, lukealonso or nvidia; not stated)", "nvfp4"
        )[0]
        == "Qwen/Qwen3.5-397B-A17B"
    )
    with pytest.raises(public.Drop):
        public.map_model("GLM-5.3-Flash", "(NVFP4 checkpoint)", "nvfp4")


def test_clean_public_script(bench_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "clean.csv"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.clean_public",
            str(bench_dir / "public.csv"),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "kept 37 of 763 rows" in done.stderr and "concurrency" in done.stderr
    assert len(read_measurements(out).rows) == 37
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.clean_public",
            str(FIXTURES / "mixed_rows.csv"),
            "-o",
            str(tmp_path / "x.csv"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "missing column(s)" in bad.stderr
    assert not (tmp_path / "x.csv").exists()


def test_silicon_dev_plans_are_the_scripts_not_the_ids(bench_dir: Path) -> None:
    # tests/data/bench/README.md: the source's ids of the 2025-11-02 DeepSeek TensorRT-LLM B200 runs say ep1 (its result
    # files then held no EP); InferenceX's dsr1_fp{4,8}_b200_trt_slurm.sh (e06929c70) chose EP = TP and attention-DP
    # by load, and the SGLang FP4 script of 2025-11 passed --enable-ep-moe (EP = TP)
    rows = {m.source.split("id=")[1]: m for m in read_measurements(bench_dir / "silicon_dev.csv").rows}

    def plan(i: str) -> tuple[int, int, int, int]:
        m = rows[i]
        return m.tp, m.dp, m.ep, m.adp_timeout_iters

    r1 = "2026_04_06_deepseek_r1_b200_sxm_trtllm_fp4_agg_"
    assert plan(r1 + "8192x1024_c128_tp4_ep1_4") == (1, 4, 4, 60)  # 8k/1k above 32 users: EP and attention-DP
    assert plan(r1 + "1024x1024_c16_tp8_ep1_98") == (8, 1, 8, 0)  # 1k/1k TP8 above 8 users: EP
    assert plan(r1 + "1024x8192_c64_tp4_ep1_52") == (4, 1, 4, 0)  # TP4 above 32 users: EP, DP only from 256
    assert plan(r1 + "1024x1024_c256_tp8_ep1_209") == (1, 8, 8, 60)
    assert plan("dsr1_b200_trtllm_fp8_agg_1024x1024_c16_cfg75") == (8, 1, 8, 0)  # the FP8 script: EP = TP always
    stale = [i for i, m in rows.items() if m.engine == "trtllm" and "_ep1_" in i and m.ep > 1]
    assert len(stale) == 19 and all(i.startswith(r1) for i in stale)
    sglang_fp4 = [m for m in rows.values() if m.engine == "sglang" and m.hardware == "b200-sxm"
                  and m.model.startswith("deepseek-ai/") and m.weight_dtype == "nvfp4"]
    assert sglang_fp4 and all(m.ep == m.tp for m in sglang_fp4)


def test_silicon_dev_attention_dp_rows_read_the_benchmark_concurrency(bench_dir: Path) -> None:
    # aiconfigurator stores batch_size per attention-DP rank (and, for runs stored as TP x EP ranks, per one
    # of those); the id names the benchmark's own concurrency (tests/data/bench/README.md)
    path = bench_dir / "silicon_dev.csv"
    raw = {i: r for i, r in enumerate(_raw_rows(path), start=1)}
    rows = {m.row: m for m in read_measurements(path).rows}
    dp = [m for m in rows.values() if m.dp > 1]
    assert len(dp) == 45
    cfg = next(m for m in dp if m.source.endswith("id=dsr1_b200_trtllm_fp4_agg_8192x1024_c256_cfg191"))
    assert (raw[cfg.row]["concurrency"], cfg.concurrency, cfg.dp) == ("4", 256, 8)  # stored 256 / 64
    per_rank = next(m for m in dp if m.source.endswith("_1024x1024_c64_tp8_0_ep8_0_976"))
    assert (raw[per_rank.row]["concurrency"], per_rank.concurrency) == ("8", 64)  # stored 64 / 8
    assert sum(raw[i]["concurrency"] != str(m.concurrency) for i, m in rows.items()) == 56
    assert benchmark_concurrency("7", "case study row 1") == "7"  # other sources: the cell as written


def test_kv_cache_dtype_spellings_and_a_bad_one() -> None:
    cells = {"model": "deepseek-ai/DeepSeek-R1", "hardware": "b200-sxm", "tp": "8", "concurrency": "4",
             "tpot_ms": "9", "source": "t"}
    got = [build_row({**cells, "kv_cache_dtype": v}, file="t.csv", row=1) for v in ("fp8_e4m3", "FP8", "bfloat16", "")]
    assert [getattr(m, "kv_cache_dtype", "rejected") for m in got] == ["fp8", "fp8", "bf16", None]
    bad = build_row({**cells, "kv_cache_dtype": "int9"}, file="t.csv", row=1)
    assert isinstance(bad, Rejected) and "kv_cache_dtype 'int9' is not one of" in bad.reason


@pytest.mark.parametrize(("field", "engine", "cells", "want", "bad"), [
    ("length_ratio", "sglang", ("0.8", "1", " "), [0.8, 1.0, None], ("0", "1.2", "wide")),
    ("recv_interval", "sglang", ("30", "10.0", ""), [30, 10, 1], ("0", "2.5", "often")),
    ("async_scheduling", "vllm", ("1", "0.0", ""), [1, 0, None], ("2", "-1", "yes")),
    ("adp_timeout_iters", "trtllm", ("60", "50.0", ""), [60, 50, 0], ("-1", "2.5", "long")),
    ("adp_batching_wait_iters", "trtllm", ("0", "10", ""), [0, 10, 10], ("-1", "0.5", "some")),
    ("mem_fraction", "sglang", ("0.95", ".82", ""), [0.95, 0.82, None], ("0", "1.5", "most")),
])
def test_run_condition_cells(field: str, engine: str, cells: tuple[str, ...], want: list[object],
                             bad: tuple[str, ...]) -> None:
    # spreadsheet spellings accepted, an empty cell is the default, anything else rejected naming the column
    base = {"model": "deepseek-ai/DeepSeek-R1", "hardware": "b200-sxm", "engine": engine, "tp": "8",
            "concurrency": "4", "tpot_ms": "9", "source": "t"}
    got = [build_row({**base, field: v}, file="t.csv", row=1) for v in cells]
    assert [getattr(m, field, "rejected") for m in got] == want
    for v in bad:
        r = build_row({**base, field: v}, file="t.csv", row=1)
        assert isinstance(r, Rejected) and field in r.reason


def test_batch_wait_cells() -> None:
    cells = {"model": "meta-llama/Llama-3.1-70B", "hardware": "b200-sxm", "engine": "trtllm", "tp": "4",
             "concurrency": "4", "ttft_ms": "178", "source": "t"}
    got = [build_row({**cells, "batch_wait_iters": i, "batch_wait_ratio": r}, file="t.csv", row=1)
           for i, r in (("20", "0.9"), ("40.0", ".8"), ("", ""))]
    assert [(m.batch_wait_iters, m.batch_wait_ratio) for m in got if not isinstance(m, Rejected)] == [
        (20, 0.9), (40, 0.8), (0, 0.0)]
    for field, bad in (("batch_wait_iters", "-1"), ("batch_wait_iters", "2.5"), ("batch_wait_ratio", "1.5")):
        r = build_row({**cells, field: bad}, file="t.csv", row=1)
        assert isinstance(r, Rejected) and field in r.reason


def test_mem_fraction_is_not_tensorrt_llms() -> None:
    # TensorRT-LLM's free_gpu_memory_fraction is a share of what the weights leave: not this column
    cells = {"model": "deepseek-ai/DeepSeek-R1", "hardware": "b200-sxm", "engine": "trtllm", "tp": "4",
             "concurrency": "4", "tpot_ms": "9", "source": "t", "mem_fraction": "0.8"}
    trt = build_row(cells, file="t.csv", row=1)
    assert isinstance(trt, Rejected) and "free_gpu_memory_fraction" in trt.reason


def test_the_scheduler_runs_ahead_as_the_column_says_else_as_the_release_did() -> None:
    # vLLM turned --async-scheduling on by default in 0.14; the gap-analysis Qwen3-32B runs (0.12.0) ran without
    # it; an InferenceX script that passed `async-scheduling: true` on an older release says so in the column
    # (tests/data/bench/README.md; the 3 dev rows that did, gpt-oss H100 on 0.11.2, were dropped with the 6
    # runs whose client did not hold their concurrency)
    rows = read_measurements(REPO / "tests" / "data" / "bench" / "silicon_dev.csv").rows
    ahead = {(m.model, m.engine_version): m.scheduled_ahead for m in rows if m.engine == "vllm"}
    assert ahead[("Qwen/Qwen3-32B", "0.12.0")] == 0
    assert ahead[("openai/gpt-oss-120b", "0.15.1")] == 1 and ahead[("meta-llama/Llama-3.1-70B", None)] == 1
    assert not [m for m in rows if m.async_scheduling is not None or m.engine_version == "0.11.2"]
    # the dropped "512-user" runs: InferenceX swept gpt-oss on H100 vLLM at 4-64 users only
    assert max(m.concurrency for m in rows if m.model == "openai/gpt-oss-120b" and m.hardware == "h100-sxm"
               and m.engine == "vllm") == 64
    assert {m.scheduled_ahead for m in rows if m.engine in ("sglang", "trtllm")} == {1}
    cells = {"model": "openai/gpt-oss-120b", "hardware": "h100-sxm", "engine": "vllm", "engine_version": "0.11.2",
             "tp": "4", "concurrency": "64", "tpot_ms": "9", "source": "t"}
    told = [build_row({**cells, "async_scheduling": v}, file="t.csv", row=1) for v in ("1", "0", "")]
    assert [m.scheduled_ahead for m in told if isinstance(m, Measurement)] == [1, 0, 0]
