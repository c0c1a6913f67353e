"""Issue #52, "What is ranked, at what load" and "The printed command" (replicas): a plan on fewer GPUs than the
budget is ranked as its replicas serving the users together, at the load asked, and printed as every replica
(its GPUs, its port) and the router, or as one data-parallel command where the engine runs replicas itself."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

MINIMAX, KIMI, LLAMA8 = "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5", "meta-llama/Llama-3.1-8B"
REL = 1e-12  # the same arithmetic on the same inputs: equal to rounding


def _json(advisor, *args: str):
    r = advisor(*args, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def _row(rows: list[dict], label: str) -> dict:
    return next(d for d in rows if d.get("plan") and d["plan"]["label"] == label)


def _predict(advisor, tp: int, users: int) -> dict:
    d = _json(advisor, "predict", LLAMA8, "--tp", str(tp), "--concurrency", str(users))
    return d[0] if isinstance(d, list) else d


# --- the deployment at the same total users ---------------------------------------------------------------------


def test_eight_tp1_replicas_at_64_users_are_eight_tp1_at_8(advisor) -> None:
    rows = _json(advisor, "rank", LLAMA8, "--objective", "throughput", "--concurrency", "64", "--all-plans")
    d = _row(rows, "TP1")
    one = _predict(advisor, 1, 8)
    dep = d["deployment"]
    assert dep["replicas"] == 8 and dep["gpus"] == 8 and dep["users"] == 64 and dep["users_per_replica"] == [8] * 8
    assert d["workload"]["concurrency"] == 8  # the row's prediction is one replica's, at its share of the users
    for key in ("ttft_ms", "tpot_ms", "per_user_tok_s", "output_tok_s", "running_sequences", "kv_cache_tokens"):
        assert d[key] == pytest.approx(one[key], rel=REL), key
    assert dep["output_tok_s"] == pytest.approx(8 * one["output_tok_s"], rel=REL)
    assert d["score"] == dep["output_tok_s"] and dep["running"] == 8 * one["running_sequences"]
    # ranked against the plans on all 8 GPUs by the same total: more than TP1 alone serving all 64 users
    assert d["score"] > _predict(advisor, 1, 64)["output_tok_s"]
    assert all(x["deployment"]["users"] == 64 for x in rows if x["rank"])


def test_users_that_do_not_divide_evenly_load_the_busiest_replica_one_more(advisor) -> None:
    # 10 users over 4 replicas of TP2: two carry 3, two carry 2; the row is the busiest replica's
    rows = _json(advisor, "rank", LLAMA8, "--objective", "throughput", "--concurrency", "10", "--all-plans")
    d = _row(rows, "TP2")
    three, two = _predict(advisor, 2, 3), _predict(advisor, 2, 2)
    assert d["deployment"]["users_per_replica"] == [3, 3, 2, 2]
    assert d["tpot_ms"] == pytest.approx(three["tpot_ms"], rel=REL)
    assert d["deployment"]["output_tok_s"] == pytest.approx(2 * three["output_tok_s"] + 2 * two["output_tok_s"],
                                                            rel=REL)


def test_one_user_is_served_by_one_replica(advisor) -> None:
    (d,) = _json(advisor, "rank", MINIMAX)
    dep = d["deployment"]
    assert d["plan"]["label"] == "TP4" and dep["replicas"] == 2 and dep["users_per_replica"] == [1, 0]
    assert dep["output_tok_s"] == d["output_tok_s"] and d["score"] == d["per_user_tok_s"]


def test_the_table_shows_the_whole_deployment(advisor) -> None:
    rows = _json(advisor, "rank", LLAMA8, "--objective", "throughput", "--concurrency", "64", "--all-plans")
    out = advisor("rank", LLAMA8, "--objective", "throughput", "--concurrency", "64", "--all-plans").out
    d = _row(rows, "TP1")
    line = next(ln for ln in out.splitlines() if ln.startswith(f"│ {d['rank']:>2} │"))
    assert "8 x TP1" in line and f"{d['deployment']['output_tok_s']:,.0f}" in line and "│    64 │" in line
    assert f"{d['rank']}. {LLAMA8}: 8 replicas of TP1 share the 64 users, 8 on each; each is TP1 on 1 GPU: " in out


# --- the load asked for ------------------------------------------------------------------------------------------


def test_concurrency_alone_ranks_throughput_at_that_load(advisor) -> None:
    rows = [d for d in _json(advisor, "rank", MINIMAX, KIMI, "--concurrency", "128") if d["rank"]]
    assert all(d["objective"] == "throughput" and d["deployment"]["users"] == 128 for d in rows)
    assert all(d["score"] == d["deployment"]["output_tok_s"] for d in rows)
    r = advisor("rank", MINIMAX, KIMI, "--concurrency", "128")
    assert r.code == 0 and "Ranked by total tok/s at 128 users" in r.out


def test_latency_with_a_load_says_the_load_is_not_used(advisor) -> None:
    r = advisor("rank", MINIMAX, "--objective", "latency", "--concurrency", "128")
    assert r.code == 0
    assert "--concurrency 128: not used by --objective latency, which ranks one user's speed" in r.err
    assert "Ranked by single-user tok/s (load: 1 user)" in r.out


def test_the_main_job_prints_its_load(advisor) -> None:
    out = advisor("rank", MINIMAX, KIMI).out
    assert " ".join(out.split()).startswith("Ranked by single-user tok/s (load: 1 user) on ")


# --- the printed command of replicas -----------------------------------------------------------------------------

FAKE = """#!/bin/sh
exec python3 -c 'import json, os, sys; open("{out}", "a").write(json.dumps([os.environ.get("CUDA_VISIBLE_DEVICES"), \
sys.argv[1:]]) + "\\n")' "$@"
"""


def _paste(tmp: Path, command: str, programs: list[str]) -> list[list]:
    """Run the printed text in bash with recording fake programs first on PATH; what each received, in order."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    log = tmp / "calls.jsonl"
    for name in programs:
        (bin_dir / name).write_text(FAKE.replace("{out}", str(log)))
        (bin_dir / name).chmod(0o755)
    python3 = shutil.which("python3")
    assert python3 is not None
    env = {"PATH": f"{bin_dir}:{Path(python3).parent}:/usr/bin:/bin", "HOME": str(tmp)}
    done = subprocess.run(["bash", "-c", command + "\nwait"], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(ln) for ln in log.read_text().splitlines()]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_two_replicas_print_each_server_and_the_router(advisor, tmp_path: Path, engine: str) -> None:
    hw = ("--hw", "h100-sxm", "--kv-cache-dtype", "fp8") if engine == "trtllm" else ()  # MiniMax's FP8 runs there
    rows = _json(advisor, "rank", MINIMAX, "--engine", engine, "--gpus", "8", *hw, "--all-plans")
    d = next(x for x in rows if x["rank"] and x["replicas"] == 2 and x["plan"]["pp"] == (2 if engine == "sglang"
                                                                                          else 1))
    launches = d["commands"]
    assert [c["role"] for c in launches] == ["replica", "replica", "router"]
    first, second, router = launches
    assert set(first["gpus"]).isdisjoint(second["gpus"]) and len(first["gpus"]) == d["plan"]["gpus"]
    for k, c in enumerate((first, second)):
        assert c["env"]["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, c["gpus"]))
        assert c["argv"][c["argv"].index("--port") + 1] == str(8001 + k)
    assert router["argv"][:3] == ["python", "-m", "sglang_router.launch_router"]
    assert "http://127.0.0.1:8001" in router["argv"] and "http://127.0.0.1:8002" in router["argv"]
    assert router["argv"][router["argv"].index("--port") + 1] == "8000"
    program = first["argv"][0]
    calls = _paste(tmp_path, d["command"], sorted({program, "python"}))
    got = sorted(calls, key=lambda c: (c[0] is None, c[0] or ""))
    want = sorted([[c["env"].get("CUDA_VISIBLE_DEVICES"), c["argv"][1:]] for c in launches],
                  key=lambda c: (c[0] is None, c[0] or ""))
    assert got == want  # each replica started on its own GPUs with exactly its argv, then the router


def test_vllm_runs_replicas_of_a_dense_model_as_one_data_parallel_server(advisor) -> None:
    rows = _json(advisor, "rank", LLAMA8, "--objective", "throughput", "--concurrency", "64", "--all-plans")
    d = _row(rows, "TP2")
    (server,) = d["commands"]
    argv = server["argv"]
    assert server["role"] == "server" and server["gpus"] == list(range(8)) and server["env"] == {}
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2" and argv[argv.index("--data-parallel-size") + 1] == "4"


def test_sglang_runs_replicas_through_its_data_parallel_controller(advisor) -> None:
    rows = _json(advisor, "rank", LLAMA8, "--engine", "sglang", "--objective", "throughput", "--all-plans",
                 "--gpus", "6")
    d = _row(rows, "TP2")
    (server,) = d["commands"]
    argv = server["argv"]
    assert d["deployment"]["replicas"] == 3 and server["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5"}
    assert argv[argv.index("--tp-size") + 1] == "2" and argv[argv.index("--dp-size") + 1] == "3"
    assert "--enable-dp-attention" not in argv
    assert argv[argv.index("--max-running-requests") + 1] == "1024"  # per worker: not divided without DP attention


def test_replicas_sit_like_the_first(advisor) -> None:
    # TP3 on a box of two 4-GPU sockets: the second replica takes three GPUs of the other socket, not 3-5
    from advisor.decide.replica_commands import replica_gpus
    from advisor.hardware import load_profile

    assert replica_gpus(load_profile("rtx-pro-6000-server"), 3, 2, 8) == [(0, 1, 2), (4, 5, 6)]
    assert replica_gpus(load_profile("rtx-pro-6000-server"), 2, 3, 6) == [(0, 1), (2, 3), (4, 5)]


def test_a_load_alone_is_not_an_objective_the_disaggregated_mode_refuses(advisor) -> None:
    # --concurrency alone picks throughput for the aggregated ranking; --mode disagg still reads it as its load
    r = advisor("rank", LLAMA8, "--mode", "disagg", "--concurrency", "64")
    assert r.code == 2 and "--objective" not in r.err and "--mode disagg: needs --max-tpot-ms" in r.err
