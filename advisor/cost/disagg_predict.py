"""`predict` of one disaggregated deployment at one workload: TTFT by its parts, TPOT, throughput, what each pool
sustains and which one limits it (`cost/disagg_serving.py`)."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from advisor.cost.disagg import DisaggPlan, Pool
from advisor.cost.disagg_serving import Combos, PrefillSide, at_users, decode_side, prefill_side, solve, wave_prefill
from advisor.cost.mixed_queue import MAX_UTILISATION
from advisor.cost.terms import Terms

TTFT_PARTS = ("request", "prealloc", "prefill_wait", "prefill", "transfer", "handoff", "first_step", "queue")
PREDICT_POINTS = 256  # decode batches per rank for one deployment (grid step ~3%: a saturated pool is resolved)


class PoolDoc(BaseModel):
    """One side of the deployment as reported."""

    model_config = ConfigDict(frozen=True)

    role: str
    plan: str
    workers: int
    gpus: int
    max_num_batched_tokens: int
    max_num_seqs: int


class DisaggPrediction(BaseModel):
    """A disaggregated deployment at `concurrency` closed-loop users (speed fields are None when it is refused)."""

    model_config = ConfigDict(frozen=True)

    model: str
    hardware: str
    engine: str
    backend: str
    prefill: PoolDoc
    decode: PoolDoc
    gpus: int
    link: str
    refused: str | None = None
    concurrency: int
    input_len: int
    output_len: int
    kv_send_mb: float | None = None  # one request's KV from the busiest prefill GPU
    kv_recv_mb: float | None = None  # ... into each decode GPU
    transfer_alone_ms: float | None = None  # that KV over the link with nothing else on it
    ttft_ms: float | None = None
    # request, prefill wait, prefill, transfer, hand-off, first step, queue
    ttft_parts_ms: dict[str, float] | None = None
    tpot_ms: float | None = None
    per_user_tok_s: float | None = None
    output_tok_s: float | None = None
    output_tok_s_per_gpu: float | None = None
    requests_per_s: float | None = None
    decode_batch_per_rank: float | None = None
    prefill_utilisation: float | None = None  # share of the prefill budget in use
    link_utilisation: float | None = None
    capacity_requests_per_s: dict[str, float] | None = None  # what each side sustains alone
    bottleneck: str | None = None  # the side with the least capacity


def combos_of(plans: list[DisaggPlan], prompt: float, ip: list[int], id_: list[int]) -> Combos:
    """Combos of deployments whose sides are prefill case `ip[k]` and decode case `id_[k]` of the sides built for
    them."""
    kv = [p.kv(prompt) for p in plans]
    return Combos(ip=np.asarray(ip), x=np.array([p.prefill.workers for p in plans], float), id=np.asarray(id_),
                  y=np.array([p.decode.workers for p in plans], float), send=np.array([b.send for b in kv]),
                  recv=np.array([b.recv for b in kv]), s_per_byte=np.array([p.link.seconds_per_byte for p in plans]),
                  latency_s=np.array([p.link.latency_s for p in plans]))


def capacities(plan: DisaggPlan, sol: dict[str, np.ndarray], pre_capacity: float) -> dict[str, float]:
    """Requests per second each side sustains alone: the prefill pool at its budget's utilisation cap, the decode
    pool with its KV room full, the link at its utilisation cap."""
    lam, b, room = sol["lam"][0], sol["b"][0], sol["room"][0]
    full = int(np.argmax(b >= room)) if np.any(b >= room) else len(b) - 1
    per_req = max(sol["link_util"][0, -1] / max(lam[-1], 1e-12), 1e-30)  # link utilisation per request/s
    return {"prefill": pre_capacity * plan.prefill.ranks, "decode": float(lam[full]),
            "link": MAX_UTILISATION / per_req}


def bench_wave(o: dict[str, float], pre: PrefillSide, plan: DisaggPlan, terms: Terms, users: int
               ) -> dict[str, float]:
    """A closed-loop benchmark (`vllm bench serve --max-concurrency`, genai-perf) releases every user at once: the
    first round's prompts queue at the prefill pool together (`disagg_serving.wave_prefill`). The decode pool starts
    each request as its KV lands, so the finishes, and the next round's arrivals, are spread by the prefill's own
    pace: as with a mixed aggregated scheduler only the first rounds are waves, the benchmark's share
    `Terms.bench_wave_share` of its requests (`cost/serving.py: wave_share`), each waiting the wave's prefill in
    place of the steady state's."""
    s = terms.bench_wave_share
    wave = float(wave_prefill(pre, np.array(float(users)), np.array(float(plan.prefill.ranks)))[0])
    steady = o["prefill_wait"] + o["prefill"]
    out = dict(o)
    out["prefill_wait"] = (1 - s) * o["prefill_wait"] + s * max(wave - o["prefill"], 0.0)
    out["ttft"] = o["ttft"] - steady + out["prefill_wait"] + o["prefill"]
    return out


def predict_disagg(plan: DisaggPlan, terms: Terms, concurrency: int, input_len: int, output_len: int,
                   benchmark: bool = False, recv_interval: float = 1.0) -> DisaggPrediction:
    """The deployment at `concurrency` users with prompts of `input_len` and `output_len` tokens; `benchmark`: as a
    closed-loop benchmark measures it, its first round released at once (`bench_wave`); `recv_interval`: the
    decode workers' --scheduler-recv-interval (`disagg_serving.solve`)."""
    def doc(pool: Pool) -> PoolDoc:
        a = pool.case.args
        return PoolDoc(role=pool.role, plan=pool.plan.label(), workers=pool.workers, gpus=pool.gpus,
                       max_num_batched_tokens=a.max_num_batched_tokens, max_num_seqs=a.max_num_seqs)

    base = dict(model=plan.arch.model, hardware=plan.hw.id, engine=plan.engine, backend=plan.backend,
                prefill=doc(plan.prefill), decode=doc(plan.decode), gpus=plan.gpus,
                link=plan.link.describe() if plan.link.links else "", refused=plan.refused,
                concurrency=concurrency, input_len=input_len, output_len=output_len)
    if not plan.runs:
        return DisaggPrediction(**base)
    pre = prefill_side([plan.prefill.case], terms, input_len)
    dec = decode_side([plan.decode.case], terms, input_len, output_len, PREDICT_POINTS)
    sol = solve(pre, dec, combos_of([plan], input_len, [0], [0]), plan.engine, recv_interval)
    o = {k: float(v[0]) for k, v in at_users(sol, np.array([float(concurrency)])).items()}
    if benchmark:
        o = bench_wave(o, pre, plan, terms, concurrency)
    kv = plan.kv(input_len)
    parts = {k: o[k] for k in TTFT_PARTS}
    cap = capacities(plan, sol, float(pre.capacity[0]))
    tok_s = o["lam"] * output_len
    return DisaggPrediction(
        **base, kv_send_mb=kv.send / 1e6, kv_recv_mb=kv.recv / 1e6,
        transfer_alone_ms=plan.transfer_s(input_len) * 1e3, ttft_ms=o["ttft"] * 1e3,
        ttft_parts_ms={k: v * 1e3 for k, v in parts.items()}, tpot_ms=o["tpot"] * 1e3,
        per_user_tok_s=1 / o["tpot"], output_tok_s=tok_s, output_tok_s_per_gpu=tok_s / plan.gpus,
        requests_per_s=o["lam"], decode_batch_per_rank=o["b"], prefill_utilisation=o["prefill_util"],
        link_utilisation=o["link_util"], capacity_requests_per_s=cap, bottleneck=min(cap, key=lambda k: cap[k]))
