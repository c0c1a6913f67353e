"""Serving `concurrency` closed-loop users: how many requests run, what the engine's scheduler puts in a step,
and TTFT, TPOT and throughput from the step time.

Schedulers (per engine, `scheduler()`):
- vLLM V1 (`vllm/v1/core/sched/scheduler.py: Scheduler.schedule`): one token budget per step
  (`max_num_batched_tokens`); running requests first (one decode token each, or their next prefill chunk),
  then waiting requests FCFS; decode tokens and prefill chunks share the step (chunked prefill).
- TensorRT-LLM (`tensorrt_llm/_torch/pyexecutor/scheduler.py`, `max_num_tokens` 8192, chunked prefill off
  by default): decodes plus whole prompts that fit the budget in one step.
- SGLang (`python/sglang/srt/managers/scheduler.py: get_next_batch_to_run`): prefill first; a step is
  either a prefill batch (chunks of `chunked_prefill_size`) or a decode batch, never both.

Steady state, arrivals staggered: with r requests running per DP rank, each lifetime of L steps holds O - 1
decode tokens and I prompt tokens, so a step carries d = r (O - 1) / L decode and p = r I / L prefill tokens
(p capped by the budget left after the decodes). A new prompt waits for the prefill work ahead of it (an
M/D/1 queue on the spare budget: utilisation u = p / (B - d), service S = I / (B - d) steps, mean wait
u S / (2 (1 - u))), then the steps that carry its own prompt. SGLang's decodes pause for every prefill step.

Before that, an arrival waits for the step it lands in to end (1/2 on average) and, where the scheduler works one
step ahead of the GPU, for the step already scheduled behind it (1 more): vLLM's `AsyncScheduler` (the default
from v0.14; `vllm/v1/engine/core.py: EngineCore.step_with_batch_queue` schedules step N + 1 before step N's
output is back), SGLang's overlap loop (`managers/scheduler.py: event_loop_overlap` receives and schedules the
next batch, launches it, then waits for the previous one) and TensorRT-LLM's (`pyexecutor/py_executor.py:
_executor_loop_overlap`). With no other request running the engine idles and takes an arrival at once
(`arrival_steps`). The first token still leaves as its step ends: the loop handles step N's output while N + 1
runs.

Pipeline parallelism keeps one micro-batch per stage in flight (`micro_batched`): each request advances a token
per pass of its micro-batch, a step at 1/PP of the load, while the other stages run the others.

DP ranks of a MoE model step together, each with its own scheduler and budget: every MoE layer's dispatch and
combine need all of them (vLLM `v1/engine/core.py: DPEngineCoreProc` runs a dummy batch on a rank with nothing to
do; SGLang `scheduler_dp_attn_mixin.py: prepare_mlp_sync_batch` gathers every rank's batch, an idle one runs an
idle batch). A step carries a prompt chunk when any of the n ranks does, 1 - (1 - f)^n of the steps where one
rank's share is f, and lasts as long as that rank's GEMMs and attention (`_lockstep`); under SGLang a rank's decode
step lasts another rank's prefill step. TensorRT-LLM's attention-DP balance (below) holds context requests until
every rank has one: its chunks come together, f of the steps with every rank's. SGLang's counterpart
(`--enable-prefill-delayer`) is off by default and not modelled.

A benchmark is often not staggered: a closed-loop client (`vllm bench serve --max-concurrency`, genai-perf)
releases every user at once, so r prompts (r x I tokens) are prefilled FCFS in n = r I / chunk steps and the
j-th waits for j of them; with equal lengths the users finish together and come back together, so the
waves persist. The share of measured requests served in such waves is `wave_share`: 1 for equal lengths under
a prefill-first scheduler, else a fitted term of the benchmark (`Terms.bench_wave_share`); 0 for a deployment's
steady state.

TensorRT-LLM's attention-DP balance (`attention_dp_config: {enable_balance, timeout_iters T,
batching_wait_iters B}`; off by default, T 50 and B 10 once on, `llmapi/llm_args.py: AttentionDpConfig`; the
InferenceX DeepSeek-R1 B200 scripts set T 60 and B 0, its gpt-oss ones only `enable_balance: true`): every step
the ranks exchange their waiting context requests (`tensorrt_llm/_torch/pyexecutor/py_executor.py:
_balance_adp_requests`). A counter counts the steps in which some rank has none, whether or not any request
waits; when it reaches T, or when every rank has one (after B more such steps), it restarts and every waiting
request is scheduled. A request therefore waits for the end of a cycle the counter started before it came
(`adp_balance_wait_steps`): T / 2 steps when arrivals are rare, less when they fill every rank sooner.
Staggered arrivals reach each rank at a rate of running / lifetime steps; with fewer users than DP ranks some
rank never has one (its dummy request counts as running) and every cycle runs to T. Requests released in waves
arrive together and do not wait.

TensorRT-LLM's batch waiting (`batch_wait_timeout_iters` T, `batch_wait_max_tokens_ratio` R; both 0 by
default; the InferenceMAX Llama-3.1-70B B200/H200 scripts of 2025-09/10 ran 20 and 0.9 at 1k/1k below TP8, its
DeepSeek-R1 FP8 B200 script from 2026-01-29 runs 40 and 0.8 at 1k/1k from 64 users): without attention-DP, and
only while generation requests run, context requests are held until T steps have passed or the step's tokens
(held prompts plus one per running decode) reach R x max_num_tokens (`tensorrt_llm/_torch/pyexecutor/
py_executor.py: PyExecutor._waiting_requests`, called from `_schedule`). The held steps are decode-only; a wave's
first round has no running decodes and is not held (`batch_wait_steps`).

SGLang's `--scheduler-recv-interval` N (default 1; the InferenceX DeepSeek-R1 and Qwen3.5 scripts pass 10 below 16
users and 30 from 16): the scheduler takes new requests from the tokenizer only when a counter reaches N; each
decode step adds 1 to it, any other step 1000, and a receive resets it (`python/sglang/srt/managers/
scheduler_recv_skipper.py: SchedulerRecvSkipper.handle`, called from `Scheduler.recv_requests`). A request that
arrives during decode steps waits for the end of an N-step cycle, N / 2 decode steps on average, (N - 1) / 2
more than when every step receives; one that arrives during a prefill step is taken at its end.

KV is paged: a running request occupies its prompt plus the tokens generated so far, I + O/2 on average
(TensorRT-LLM reserves the whole I + O at admission, `scheduler`);
users beyond what fits wait in the queue, and in a closed loop (Little's law) each waits
(users / running - 1) lifetimes. Preemption costs nothing here on average: with staggered arrivals each
completion frees I + O tokens, the admission it makes room for takes I, and the running requests grow by O
before the next completion, so admissions and growth balance (vLLM preempts only when a running request
cannot get a block, `v1/core/sched/scheduler.py: Scheduler.schedule`). A synchronized wave admits what fits at
I tokens each and must preempt and recompute as they grow; that is not modelled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from advisor.cost.features import Features
from advisor.cost.mixed_queue import MAX_UTILISATION, lifetime_queue
from advisor.cost.terms import Terms
from advisor.engines import TRTLLM_ADP_BATCHING_WAIT_ITERS

# step(decode tokens, their mean context, prefill tokens, their mean context, sampled rows) -> breakdown
StepFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], dict[str, np.ndarray]]
MAX_BATCH_WAIT_TERMS = 256  # Poisson terms of the batch-wait window; beyond them P(N > j) is ~0 for rate T < 100


class RunOptions(NamedTuple):
    """Scheduling options a run set beyond the engine's defaults (scalars, or arrays per row)."""

    batch_wait_iters: np.ndarray | float = 0.0  # TensorRT-LLM batch_wait_timeout_iters
    batch_wait_ratio: np.ndarray | float = 0.0  # TensorRT-LLM batch_wait_max_tokens_ratio
    recv_interval: np.ndarray | float = 1.0  # SGLang --scheduler-recv-interval
    adp_timeout_iters: np.ndarray | float = 0.0  # TensorRT-LLM attention_dp_config.timeout_iters; 0: balance off
    adp_batching_wait_iters: np.ndarray | float = float(TRTLLM_ADP_BATCHING_WAIT_ITERS)  # its batching_wait_iters
    scheduled_ahead: np.ndarray | float = 1.0  # steps scheduled ahead of the GPU (`engines.scheduled_ahead`)


@dataclass(frozen=True)
class Scheduler:
    """What an engine puts in one step: `budget` tokens, decodes mixed with prefill or not; whether a request is
    admitted only with KV room for its whole output (`reserves_output`)."""

    mixed: bool
    budget: np.ndarray | float  # tokens per step and DP rank (`EngineArgs.max_num_batched_tokens`), per case
    reserves_output: bool = False


def scheduler(engine: str, budget: np.ndarray | float) -> Scheduler:
    """SGLang runs prefill and decode in separate steps; vLLM V1 and TensorRT-LLM mix them. TensorRT-LLM's
    default capacity policy, GUARANTEED_NO_EVICT, reserves every running request's blocks to completion
    (`cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp: GuaranteedNoEvictScheduler`,
    `KVCacheManager::getRemainingBlocksToCompletion`; `commands/serve.py` sets that policy)."""
    return Scheduler(mixed=engine != "sglang", budget=np.asarray(budget, float), reserves_output=engine == "trtllm")


def wave_share(fitted: float, sched: Scheduler, fixed_lengths: np.ndarray | bool) -> np.ndarray:
    """Share of a closed-loop benchmark's requests served in synchronized waves. A prefill-first scheduler
    prefills a released wave before any of it decodes (SGLang `scheduler.py: get_next_batch_to_run` runs a
    prefill batch whenever one is waiting), so when every request has the same lengths the wave decodes in
    lockstep, finishes in one step and comes back whole: every round is a wave (1). Mixed steps start decoding
    a wave's first prompts while later ones prefill, and those offsets carry into the next round; lengths drawn
    at random spread the finishes too: then only the first rounds are waves (`fitted`)."""
    return np.where(np.asarray(fixed_lengths) & (not sched.mixed), 1.0, fitted)


def kv_capacity(F: Features, occupied_tokens: np.ndarray) -> np.ndarray:
    """Requests of `occupied_tokens` one DP rank's KV room holds (paged: blocks as tokens arrive), capped by
    max_num_seqs. KV features cover all PP stages; one GPU holds its stage's share."""
    win = np.minimum(occupied_tokens, np.where(F.window > 0, F.window, occupied_tokens))
    per_seq = (F.kv_full * occupied_tokens + F.kv_win * win + F.state_bytes) / F.pp
    return np.minimum(np.floor(F.kv_room / np.maximum(per_seq, 1e-9)), F.num_seqs)


def serve(F: Features, terms: Terms, step: StepFn, sched: Scheduler, concurrency: np.ndarray,
          input_len: np.ndarray, output_len: np.ndarray, share: float | np.ndarray = 0.0,
          options: RunOptions = RunOptions()) -> dict[str, np.ndarray]:
    """TTFT, TPOT, tok/s for `concurrency` closed-loop users with fixed lengths (arrays broadcast to
    [P, C, L]); also the running requests, the decode step's breakdown and the prefill share of a step.
    `options`: batch waiting and the receive interval the run set (module docstring)."""
    users = np.ceil(concurrency / F.dp)
    occupied = input_len + output_len * (1.0 if sched.reserves_output else 0.5)
    running = np.maximum(np.minimum(users, kv_capacity(F, occupied)), 1.0)
    decodes = np.maximum(output_len - 1, 0)
    steps = decodes / F.spec_tokens  # decode steps per request: each yields spec_tokens tokens (1 without MTP)
    ctx_dec = input_len + output_len / 2
    zero = 0 * running
    step = micro_batched(step, np.minimum(F.pp, running))
    parts = step(running, ctx_dec, zero, input_len / 2, running)
    t_dec = parts["total"]
    arrival = arrival_steps(running, options.scheduled_ahead)
    # DP ranks whose prompt chunks fall in steps of their own: a MoE layer's dispatch/combine holds every rank,
    # and no balancing aligns their chunks (TensorRT-LLM's `attention_dp_config` balance, `adp_balance_wait_steps`)
    independent = np.where((F.moe_layers > 0) & (np.asarray(options.adp_timeout_iters) <= 0), F.dp, 1.0)
    steady = _mixed(step, sched, running, input_len, steps, ctx_dec, arrival, independent) if sched.mixed \
        else _separate(step, sched, running, input_len, steps, ctx_dec, parts, arrival, independent)
    s = share  # of requests served in synchronized waves (`wave_share`)
    if np.any(s):
        first = _first_round(step, sched, running, input_len, steps, ctx_dec, t_dec)
        tpot, waves = ((1 - s) * steady[0] + s * first[0]) / F.spec_tokens, s * first[1]
    else:  # a deployment's steady state (no benchmark client): no wave to cost
        tpot, waves = steady[0] / F.spec_tokens, 0.0
    # attention-DP balancing (TensorRT-LLM): a staggered context request waits for every rank to have one
    rate = np.where(concurrency < F.dp, 0.0, running / (steps + 1))
    held = adp_balance_wait_steps(rate, F.dp, options.adp_timeout_iters, options.adp_batching_wait_iters) * steady[0]
    pooled = batch_wait_steps(running / (steps + 1), options.batch_wait_iters,
                              np.asarray(options.batch_wait_ratio) * sched.budget - running, input_len)
    held = held + np.where(F.dp > 1, 0.0, pooled) * t_dec
    # the receive interval: arrivals during decode steps (all of a wave's) wait (N - 1) / 2 more of them
    polled = recv_wait_steps(options.recv_interval) * t_dec * (1 - (1 - s) * steady[2])
    ttft_run = (1 - s) * (steady[1] + held) + waves + polled + terms.request_overhead_us * 1e-6
    lifetime = ttft_run + decodes * tpot
    queued = np.maximum(users / running - 1, 0)
    active = np.minimum(concurrency, F.dp * running)  # idle DP ranks run dummy forwards, serve no one
    shape = np.broadcast_shapes(np.shape(tpot), np.shape(ttft_run), np.shape(active))
    return {"ttft_s": np.broadcast_to(ttft_run + queued * lifetime, shape),
            "tpot_s": np.broadcast_to(tpot, shape),
            "output_tok_s": np.broadcast_to(active * output_len / lifetime, shape),
            "per_user_tok_s": np.broadcast_to(1 / tpot, shape), "running": np.broadcast_to(active, shape),
            "prefill_interference_s": np.broadcast_to(tpot - t_dec / F.spec_tokens, shape),
            "prefill_share": np.broadcast_to(steady[2], shape),
            **{f"step_{k}": np.broadcast_to(v, shape) for k, v in parts.items()}}


def recv_wait_steps(recv_interval: np.ndarray | float) -> np.ndarray:
    """Steps a request waits for a scheduler that looks for new ones every R steps (SGLang --scheduler-recv-interval,
    `managers/scheduler_recv_skipper.py`): (R - 1) / 2 on average, 0 for one that looks every step."""
    return (np.maximum(recv_interval, 1.0) - 1) / 2


def micro_batched(step: StepFn, k: np.ndarray) -> StepFn:
    """Pipeline parallelism keeps k micro-batches in flight, one per stage (up to one per PP stage, and no more
    than the running requests): vLLM `config/vllm.py: VllmConfig.max_concurrent_batches` ("PP requires PP-size
    concurrent batches to fill the pipeline", `v1/engine/core.py: EngineCore.step_with_batch_queue`), SGLang
    `scheduler_pp_mixin.py: event_loop_pp`, TensorRT-LLM `py_executor.py: _executor_loop_pp`. While one micro-
    batch passes a stage the others pass theirs, so every request advances a token each time one micro-batch
    (1/k of the tokens) has passed all stages: the step `step` costs (summed over stages) at 1/k of the load.
    k = 1 (no PP): `step` itself."""
    k = np.maximum(np.asarray(k, dtype=float), 1.0)
    if np.all(k <= 1):
        return step

    def one_of_k(dec: np.ndarray, ctx: np.ndarray, pre: np.ndarray, ctx_pre: np.ndarray,
                 sampled: np.ndarray) -> dict[str, np.ndarray]:
        return step(dec / k, ctx, pre / k, ctx_pre, sampled / k)

    return one_of_k


def adp_balance_wait_steps(rate: np.ndarray, dp: np.ndarray, timeout: np.ndarray | float,
                           batching: np.ndarray | float = 0.0) -> np.ndarray:
    """Mean steps a context request is held by TensorRT-LLM's attention-DP balance (module docstring), for
    `rate` arrivals per step on each of n = `dp` ranks, timeout T, batching wait B. A cycle ends at
    M = max of n Exp(rate) (every rank has one) plus B, or at T; with q(t) = 1 - e^(-rate t):
    E[cycle] = E[min(T, M)] + B q(T)^n, and the requests' summed wait in a cycle is
    int_0^T n rate t (1 - q^(n-1)) dt + B (q(T)^n + n (n-1) rate^2 int_0^T t e^(-rate t) q^(n-2) dt)
    + n rate B^2 q(T)^n / 2; their mean is that over n rate E[cycle] (Wald). Binomial expansions of q^k give
    closed forms. Against a step-by-step simulation of `_balance_adp_requests` (T 50-60, B 0-10, dp 2-8):
    within 0.7 steps (continuous time against whole steps)."""
    dp = np.asarray(dp, dtype=float)
    T = np.asarray(timeout, dtype=float)
    shape = np.broadcast_shapes(np.shape(rate), dp.shape, T.shape, np.shape(batching))
    if not np.any(T > 0):
        return np.zeros(shape)
    lam = np.maximum(rate, 1e-12)
    B = np.asarray(batching, dtype=float)

    def t_exp(a: np.ndarray) -> np.ndarray:  # int_0^T t e^(-a t) dt
        aT = a * T
        return np.where(aT < 1e-9, T * T / 2, (-np.expm1(-aT) - aT * np.exp(-aT)) / np.maximum(a, 1e-300) ** 2)

    waits, cycle, bal = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    c_n1, c_n, c_n2 = np.ones_like(dp), np.ones_like(dp), np.ones_like(dp)  # C(n-1, k), C(n, k), C(n-2, k-1)
    for k in range(1, int(np.max(dp, initial=1)) + 1):
        sign = (-1.0) ** (k + 1)
        c_n1, c_n = c_n1 * np.maximum(dp - k, 0) / k, c_n * np.maximum(dp - k + 1, 0) / k
        # 1 - q^(n-1) = sum_k C(n-1, k) (-1)^(k+1) e^(-k rate t), and likewise for the other two integrals
        waits = waits + sign * c_n1 * t_exp(k * lam)  # int_0^T t (1 - q^(n-1)) dt
        cycle = cycle + sign * c_n * -np.expm1(-k * lam * T) / (k * lam)  # E[min(T, M)]
        bal = bal + sign * c_n2 * t_exp(k * lam)  # int t e^(-rate t) q^(n-2): C(n-2, k-1) (-1)^(k-1)
        c_n2 = c_n2 * np.maximum(dp - 1 - k, 0) / k
    balanced = (-np.expm1(-lam * T)) ** dp  # P(M < T)
    total = dp * lam * waits + B * (balanced + dp * (dp - 1) * lam ** 2 * bal) + dp * lam * B ** 2 / 2 * balanced
    mean = total / np.maximum(dp * lam * (np.minimum(cycle, T) + B * balanced), 1e-300)  # rows without it: 0 / 0
    # some rank never has one: every cycle runs to T; the clip guards the alternating sums past ~32 ranks
    held = np.where(np.asarray(rate) > 0, np.clip(mean, 0.0, T + B), T / 2)
    return np.where((dp > 1) & (T > 0), held, 0.0)


def batch_wait_steps(rate: np.ndarray, timeout: np.ndarray | float, short: np.ndarray,
                     prompt: np.ndarray) -> np.ndarray:
    """Mean steps a staggered context request is held by TensorRT-LLM's batch waiting (module docstring), for
    `rate` arrivals per step, a timeout of T = `timeout` steps and `short` tokens (R x max_num_tokens minus the
    running decodes) that k = ceil(short / `prompt`) held prompts fill. A window opened by one arrival closes
    at T or at the (k - 1)-th later arrival (Poisson): L = E[min(T, Gamma(k - 1, rate))]
    = sum_{j < k - 1} P(Poisson(rate T) > j) / rate, 0 when the opener alone fills it; the opener waits L, the
    ~rate L others arriving inside it L / 2 each: (L + rate L^2 / 2) / (1 + rate L). Against a step-by-step
    simulation (1/rate 4-256 steps, T 20): within 3% when the timeout closes the window, up to 16% high when
    the prompts fill it (the last one waits nothing)."""
    if not np.any(timeout):  # the default: no holding
        return np.zeros(np.broadcast_shapes(np.shape(rate), np.shape(short), np.shape(prompt)))
    r = np.maximum(rate, 1e-12)
    mu = r * np.asarray(timeout, dtype=float)
    need = np.ceil(np.maximum(short, 0) / np.maximum(prompt, 1.0)) - 1  # arrivals after the opener
    pmf, cdf, window = np.exp(-mu), np.zeros_like(mu), np.zeros(np.broadcast_shapes(mu.shape, np.shape(need)))
    for j in range(int(min(np.max(need, initial=0), MAX_BATCH_WAIT_TERMS))):
        cdf = cdf + pmf  # P(Poisson(mu) <= j)
        window = window + np.where(j < need, 1 - cdf, 0.0) / r
        pmf = pmf * mu / (j + 1)
    window = np.minimum(window, timeout)
    arrivals = r * window
    return (window + arrivals * window / 2) / (1 + arrivals)


def arrival_steps(running: np.ndarray, ahead: np.ndarray | float) -> np.ndarray:
    """Steps a staggered arrival waits before the step that takes it (module docstring): the rest of the step in
    flight, 1/2, plus the `ahead` steps already scheduled behind it; none when no other request runs."""
    return np.minimum(np.maximum(running - 1, 0.0), 1.0) * (0.5 + np.asarray(ahead, dtype=float))


def _mixed(step: StepFn, sched: Scheduler, running: np.ndarray, input_len: np.ndarray, decodes: np.ndarray,
           ctx_dec: np.ndarray, arrival: np.ndarray, independent: np.ndarray | float = 1.0) -> tuple[np.ndarray, ...]:
    """Staggered arrivals, decodes and prefill chunks in one step: (TPOT, TTFT, prefill share of a step).
    TPOT is the average mixed step; a prompt waits for the prefill ahead of it, then the steps carrying it."""
    d, spare, p, service, wait = lifetime_queue(running, input_len, decodes, sched.budget)
    # A step carries a whole chunk or none: a share f of steps carries `chunk` prompt tokens. Averaging the
    # prompt tokens over every step instead would spread them thin, touching every MoE expert each step.
    chunk = np.minimum(spare, np.maximum(input_len, p))
    f = p / chunk
    # DP ranks of a MoE model step together (each MoE layer's dispatch/combine needs every rank), so a step is a
    # prefill step when any of the n ranks carries a chunk: 1 - (1 - f)^n of the steps (`_lockstep`).
    n = np.maximum(np.asarray(independent, dtype=float), 1.0)
    busy = _any_rank(f, n)
    full, dec = step(d, ctx_dec, chunk, input_len / 2, d + 1), step(d, ctx_dec, 0 * chunk, input_len / 2, d)
    t_pre = _lockstep(full, dec, n, n * f / np.maximum(busy, 1e-12))
    t = (1 - busy) * dec["total"] + busy * t_pre
    own = np.maximum(service, 1.0) * _lockstep(full, dec, n, 1 + (n - 1) * f)
    return t, (arrival + wait) * t + own, p / np.maximum(p + d, 1e-9)


def _any_rank(f: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The share of steps in which any of n lockstepped ranks carries a chunk, each in a share f of them:
    1 - (1 - f)^n, f itself on one rank; the power taken on the plans (leading axis) with n > 1 only."""
    per_plan = n.ndim == f.ndim and n.shape[0] == f.shape[0] and all(k == 1 for k in n.shape[1:])
    if not per_plan:
        return np.where(n > 1, 1 - (1 - f) ** n, f)
    rows = np.flatnonzero(np.ravel(n) > 1)
    if not rows.size:
        return f
    busy = np.array(f, dtype=float)
    busy[rows] = 1 - (1 - f[rows]) ** n[rows]
    return busy


def _lockstep(full: dict[str, np.ndarray], dec: dict[str, np.ndarray], n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """A step of n lockstepped DP ranks in which k of them (on average) carry a prompt chunk: the chunk's rank
    sets the GEMMs, attention and the busiest rank's dispatch/combine (`full`, the step with the chunk on every
    rank, as `step` assumes), the MoE runs k chunks' tokens, between the decode step's MoE (`dec`, none) and
    `full`'s (n), linearly in k. vLLM runs such a step unpadded: a rank whose batch exceeds the largest CUDA graph
    runs eager and then every rank does, each with its own tokens (v0.33.0 `v1/worker/gpu/dp_utils.py:
    sync_cudagraph_and_dp_padding`); TensorRT-LLM's attention-DP gathers each rank's own count
    (`all_rank_num_tokens`). n = 1: `full` as it is."""
    if np.all(n <= 1):
        return full["total"]
    return full["total"] - (1 - np.minimum(k / n, 1.0)) * (full["mech_moe"] - dec["mech_moe"])


def _separate(step: StepFn, sched: Scheduler, running: np.ndarray, input_len: np.ndarray, decodes: np.ndarray,
              ctx_dec: np.ndarray, dec: dict[str, np.ndarray], arrival: np.ndarray,
              independent: np.ndarray | float = 1.0) -> tuple[np.ndarray, ...]:
    """Staggered arrivals, prefill-first: other requests' prefill steps pause the decodes; a prompt waits for
    the prefills ahead of it (M/D/1 on the prefill steps). (TPOT, TTFT, prefill share of the time).
    n lockstepped DP ranks: a rank's decode step lasts a prefill step when another rank prefills in it,
    1 - (1 - q)^(n - 1) of them for a rank's share q of prefill steps (`_lockstep`)."""
    zero = 0 * running
    chunk = np.minimum(input_len, sched.budget)
    pre_steps = np.ceil(input_len / sched.budget)
    n = np.maximum(np.asarray(independent, dtype=float), 1.0)
    q = running * pre_steps / (running * pre_steps + np.maximum(decodes, 1.0))
    one = _lockstep(step(zero, ctx_dec, chunk, input_len / 2, 1 + zero), dec, n, 1 + (n - 1) * q)
    t_pre = pre_steps * one
    held = np.where(n > 1, 1 - (1 - q) ** (n - 1), 0.0)
    t_dec = (1 - held) * dec["total"] + held * one
    rho = (running - 1) * t_pre / (t_pre + decodes * t_dec)
    tpot = t_dec * (1 + rho)
    u = np.minimum(running * t_pre / (t_pre + decodes * tpot), MAX_UTILISATION)
    return tpot, t_pre + u * t_pre / (2 * (1 - u)) + arrival * t_dec, rho / (1 + rho)


def _first_round(step: StepFn, sched: Scheduler, running: np.ndarray, input_len: np.ndarray,
                 decodes: np.ndarray, ctx_dec: np.ndarray, t_dec: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every user released at once: r prompts prefilled FCFS in n = r I / chunk steps (mixed: the decodes of
    prompts done so far ride along, r / 2 on average); the j-th prompt's first token at its step, TTFT
    (n + 1) / 2 prefill steps on average; early requests decode during the remaining prefill steps (mixed:
    at their pace; SGLang: paused). (TPOT, TTFT)."""
    riding = running / 2 if sched.mixed else 0 * running
    chunk = np.minimum(running * input_len, np.maximum(sched.budget - riding, 1.0))
    n_pre = np.maximum(running * input_len / chunk, 1.0)
    t_pre = step(riding, ctx_dec, chunk, input_len / 2, riding + chunk / input_len)["total"]
    extra = (n_pre - 1) / 2 * (t_pre - t_dec if sched.mixed else t_pre)
    return t_dec + extra / np.maximum(decodes, 1), (n_pre + 1) / 2 * t_pre
