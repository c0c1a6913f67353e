"""Serving dynamics of a disaggregated deployment, from the step model of aggregated serving (`cost/step.py:
step_time` through the engine's comm timers, as `cost/timing.py: predict` builds it) and the scheduler pieces of
`cost/serving.py` (M/D/1 wait on the token budget, the step an arrival lands in, KV capacity, PP micro-batches).

A prefill pool is the scheduler with no decodes. Requests reach one of its ranks at r per second (Poisson, the
routers spread them evenly); a busy step carries the prompt tokens that arrived during the step before, at least
one prompt's chunk c = min(I, B) and at most the token budget B, so its size k solves k = r I t(k) (t: the step
time, affine between t(c) and t(B)). A prompt waits for the step it lands in (a scheduler that works a step ahead
has none prepared when nothing waits: what waits is the queue), or, when prompts fill the budget, for the prompts
ahead of it (M/D/1 on the budget, as
`serving._mixed`: utilisation u = r I t(B) / B, service I / B steps, wait u S / (2 (1 - u))), then for its own
steps, max(I / k, 1) of them. Its capacity is the rate at which u reaches `mixed_queue.MAX_UTILISATION`.

A decode pool is the scheduler with prompts arriving as KV and no prefill: b requests per rank decode in every step,
TPOT = step(b decodes at context I + O / 2) / tokens per step (MTP), free of prompt chunks. A request enters the
running batch at the next step boundary (the step in flight and those prepared ahead, when the pool is busy) and its
first token needs one decode step where the engine computes it there (`cost/disagg.py: FIRST_TOKEN_STEP`). Its KV
room holds the running requests (I + O / 2 tokens each, I + O under TensorRT-LLM's admission) and the KV of
requests in transfer (SGLang: from before their prefill, as it pre-allocates), so fewer may run.

The closed loop of N users: at a decode batch b per rank the pools serve lambda = y_ranks b / ((O - 1) TPOT)
requests per second; the prefill pool sees r = lambda / x_ranks, the link carries lambda requests' KV (M/D/1 on
the busiest GPU's link); N(b) = lambda (TTFT + (O - 1) TPOT) (Little). N(b) grows with b, so a grid of b maps to
users; past the last b every side can sustain (prefill or link at capacity, decode KV full), further users queue and
TTFT grows by queued / lambda. Throughput is therefore the slowest of the prefill pool, the link and the decode pool.

TTFT = request overhead (+ SGLang's pre-allocation: the decode reserves the KV at its next step boundary before the
prefill may start, `disagg.PREALLOCATES`) + prefill wait + prefill steps + the exposed transfer (all of it once the
prefill is done, vLLM and TensorRT-LLM; SGLang: the last chunk's, or what the link has not finished while later
chunks computed) + the hand-off to the decode's next step + its first step where there is one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from advisor.cost.disagg import FIRST_TOKEN_STEP, OVERLAP, PREALLOCATES
from advisor.cost.features import Features
from advisor.cost.mixed_queue import MAX_UTILISATION
from advisor.cost.serving import StepFn, kv_capacity, micro_batched, recv_wait_steps
from advisor.cost.step import comm_fn
from advisor.cost.sweep import Case
from advisor.cost.terms import Terms
from advisor.cost.timing import serving_step

DECODE_POINTS = 32  # decode batches per rank evaluated per plan (geometric from MIN_BATCH to the KV cap)
MIN_BATCH = 0.05  # requests per rank at the lightest point: N(b) then falls below one user


def pool_step(cases: list[Case], terms: Terms) -> tuple[Features, StepFn]:
    """The features of `cases` (one hardware profile and engine) as [P, 1, 1] and their step time, with MTP's
    verify and draft passes as `cost/timing.py: predict` adds them."""
    hw, engine, cluster = cases[0].hw, cases[0].args.engine, cases[0].cluster
    F = Features.from_flat(np.stack([c.features() for c in cases])).grid()
    comm = comm_fn(hw, engine, cluster) if cluster is not None else comm_fn(hw, engine)
    return F, serving_step(F, hw, terms, comm)


@dataclass(frozen=True)
class PrefillSide:
    """Prefill plans [P] for prompts of I tokens: one chunk's step, the full budget's step, the budget, ranks."""

    prompt: float
    chunk: np.ndarray  # c = min(I, B)
    budget: np.ndarray  # B: tokens per step and rank (the resolved engine's, capped by its KV room)
    t_chunk: np.ndarray  # seconds of a step carrying c tokens
    t_full: np.ndarray  # seconds of a step carrying B tokens
    dp: np.ndarray
    overhead_s: float  # the request's fixed latency (API server, tokenization), paid once

    @property
    def capacity(self) -> np.ndarray:
        """Requests per second one rank sustains (budget utilisation at `MAX_UTILISATION`)."""
        return MAX_UTILISATION * self.budget / (self.prompt * self.t_full)

    def latency(self, rate: np.ndarray, i: np.ndarray | slice = slice(None)) -> dict[str, np.ndarray]:
        """Prefill wait and own steps (seconds) for `rate` requests per second per rank on plans `i` (rate
        broadcasts against [len(i), ...]); also the busy step's size and time (module docstring)."""
        def col(a: np.ndarray) -> np.ndarray:
            v = a[i]
            return v.reshape(v.shape + (1,) * (np.ndim(rate) - v.ndim))

        c, B, tc, tB = col(self.chunk), col(self.budget), col(self.t_chunk), col(self.t_full)
        prompt = self.prompt
        slope = np.where(B > c, (tB - tc) / np.maximum(B - c, 1.0), 0.0)
        lam = rate * prompt  # prompt tokens per second
        denom = 1 - lam * slope
        k = np.where(denom > 0, lam * (tc - slope * c) / np.maximum(denom, 1e-12), B)
        k = np.clip(k, c, B)
        tk = tc + slope * (k - c)
        busy = np.minimum(lam * tk / k, 1.0)
        u = np.minimum(lam * tB / B, MAX_UTILISATION)
        queue = u * (prompt / B) / (2 * (1 - u)) * tB  # M/D/1 on the budget (`serving._mixed`)
        wait = np.maximum(queue, busy * 0.5 * tk)
        return {"wait": wait, "own": np.maximum(prompt / k, 1.0) * tk, "step": tk, "tokens": k, "busy": busy,
                "utilisation": u, "t_full": tB * np.ones_like(k)}


def prefill_side(cases: list[Case], terms: Terms, prompt: float) -> PrefillSide:
    """Each prefill plan's step at one chunk and at the full budget (one `step_time` call)."""
    F, step = pool_step(cases, terms)
    seqs = kv_capacity(F, np.asarray(float(prompt)))
    B = np.minimum(F.batched_tokens, np.maximum(seqs, 1.0) * prompt)
    c = np.minimum(float(prompt), B)
    k = np.concatenate([c, B], axis=1)  # [P, 2, 1]
    t = step(0 * k, 0 * k, k, np.full_like(k, prompt / 2), np.maximum(k / prompt, 1.0))["total"]
    return PrefillSide(prompt=float(prompt), chunk=c.ravel(), budget=B.ravel(), t_chunk=t[:, 0, 0],
                       t_full=t[:, 1, 0], dp=F.dp.ravel(), overhead_s=terms.request_overhead_us * 1e-6)


@dataclass(frozen=True)
class DecodeSide:
    """Decode plans [P] over a grid of running requests per rank [P, D]: step time, TPOT, and the KV cap."""

    prompt: float
    output: float
    b: np.ndarray  # [P, D] requests decoding per rank
    t_step: np.ndarray  # [P, D] seconds of one decode step
    tpot: np.ndarray  # [P, D] seconds per output token
    cap: np.ndarray  # [P] requests one rank runs at most: its KV room's and max_num_seqs
    kv_cap: np.ndarray  # [P] requests one rank's KV room holds (max_num_seqs aside)
    seqs: np.ndarray  # [P] max_num_seqs per rank
    occupied: np.ndarray  # [P] KV tokens a running request occupies on average
    ahead: np.ndarray
    dp: np.ndarray


def decode_side(cases: list[Case], terms: Terms, prompt: float, output: float,
                points: int = DECODE_POINTS) -> DecodeSide:
    """Each decode plan's step over a geometric grid of batches up to what its KV room holds."""
    F, step = pool_step(cases, terms)
    trt = np.array([c.args.engine == "trtllm" for c in cases])[:, None, None]
    occupied = prompt + output * np.where(trt, 1.0, 0.5)  # TensorRT-LLM reserves the whole output (`serving`)
    kv_cap = np.maximum(kv_capacity(dataclasses.replace(F, num_seqs=np.full_like(F.num_seqs, np.inf)), occupied), 1.0)
    cap = np.minimum(kv_cap, F.num_seqs)
    b = np.stack([batch_grid(float(c), points) for c in cap.ravel()])[:, :, None]  # [P, D, 1]
    ctx = np.full_like(b, prompt + output / 2)
    t = micro_batched(step, np.minimum(F.pp, b))(b, ctx, 0 * b, np.full_like(b, prompt / 2), b)["total"]
    return DecodeSide(prompt=float(prompt), output=float(output), b=b[..., 0], t_step=t[..., 0],
                      tpot=(t / F.spec_tokens)[..., 0], cap=cap.ravel(), kv_cap=kv_cap.ravel(),
                      seqs=F.num_seqs.ravel(), occupied=occupied.ravel(),
                      ahead=F.sched_ahead.ravel(), dp=F.dp.ravel())


def batch_grid(cap: float, points: int) -> np.ndarray:
    """Requests decoding per rank: a quarter of the points geometric from `MIN_BATCH` to 1, then whole batches
    geometric up to `cap` (a step runs a whole number of sequences: CUDA-graph padding (`step.pad_tokens`) of a
    fractional batch would add steps that no batch runs), the last repeated to `points` values."""
    light = MIN_BATCH ** np.linspace(1.0, 0.0, max(points // 4, 2))[:-1]
    whole = np.round(np.geomspace(1.0, max(cap, 1.0), points))
    whole = whole[np.concatenate([[True], whole[1:] > whole[:-1]])]
    grid = np.concatenate([light, whole])[:points]
    return np.concatenate([grid, np.full(points - len(grid), grid[-1])])


@dataclass(frozen=True)
class Combos:
    """Deployments to evaluate together: prefill plan index, workers, decode plan index, workers [M], and the
    KV each moves per request (send per busiest prefill GPU, receive per decode GPU) over its link."""

    ip: np.ndarray
    x: np.ndarray
    id: np.ndarray
    y: np.ndarray
    send: np.ndarray
    recv: np.ndarray
    s_per_byte: np.ndarray
    latency_s: np.ndarray


def solve(pre: PrefillSide, dec: DecodeSide, m: Combos, engine: str, recv_interval: float = 1.0
          ) -> dict[str, np.ndarray]:
    """Every combo over its decode plan's batch grid: arrays [M, D] of the closed loop at each b (module
    docstring): users, requests/s, TPOT, the TTFT parts, and whether every side sustains it (`valid`). An arriving
    request sees the other N - 1 users' load (the arrival theorem of closed queues, as `serving.arrival_steps`
    has no wait with one user): the waits scale by (N - 1) / N, N from a first pass without them.
    `recv_interval`: the decode workers look for new requests every that many steps (SGLang
    --scheduler-recv-interval), so a pre-allocation waits (R - 1) / 2 steps more when they are busy, as the
    aggregated scheduler's arrivals do (`serving.recv_wait_steps`)."""
    b, tpot, tdec = dec.b[m.id], dec.tpot[m.id], dec.t_step[m.id]
    decode_steps = max(dec.output - 1, 1e-9)
    Y, X = (m.y * dec.dp[m.id])[:, None], (m.x * pre.dp[m.ip])[:, None]
    lam = Y * b / (decode_steps * tpot)
    p = pre.latency(lam / X, m.ip)
    # the link: the busiest sender and each receiver, M/D/1 on the slower of the two
    spb, lat = m.s_per_byte[:, None], m.latency_s[:, None]
    alone = lat + np.maximum(m.send, m.recv)[:, None] * spb
    u_link = np.maximum(lam / X * m.send[:, None], lam / Y * m.recv[:, None]) * spb
    u = np.minimum(u_link, MAX_UTILISATION)
    n = np.maximum(np.ceil(pre.prompt / pre.budget[m.ip]), 1.0)[:, None]
    request = np.full_like(lam, pre.overhead_s)
    first = tdec if FIRST_TOKEN_STEP[engine] else 0 * tdec
    others = 1.0
    for _ in range(2):  # without, then with the arrival theorem's (N - 1) / N
        move = alone * (1 + others * u / (2 * (1 - u)))
        exposed = np.maximum(move / n, move - (n - 1) * p["t_full"]) if OVERLAP[engine] == "chunked" else move
        wait = others * p["wait"]
        busy = np.minimum(others * b, 1.0)  # the decode pool steps for other users
        handoff = busy * (0.5 + dec.ahead[m.id][:, None]) * tdec
        # SGLang: the decode's pre-allocation, at the next step boundary where it looks for requests, before the
        # prefill may start
        prealloc = handoff + busy * recv_wait_steps(recv_interval) * tdec if PREALLOCATES[engine] else 0 * handoff
        ttft = request + prealloc + wait + p["own"] + exposed + handoff + first
        users = lam * (ttft + decode_steps * tpot)
        others = np.maximum(1 - 1 / np.maximum(users, 1e-9), 0.0)
    held = exposed + handoff + (wait + p["own"] if PREALLOCATES[engine] else 0.0)  # decode KV reserved for it
    # KV of requests in transfer takes room from the running ones (max_num_seqs counts the running only)
    kv_room = dec.kv_cap[m.id][:, None] - lam / Y * held * pre.prompt / dec.occupied[m.id][:, None]
    room = np.minimum(kv_room, dec.seqs[m.id][:, None])
    ok = (b <= room) & (p["utilisation"] < MAX_UTILISATION) & (u_link < MAX_UTILISATION)
    valid = np.cumprod(ok, axis=1).astype(bool)  # the sustainable prefix of the grid
    return {"b": b, "lam": lam, "tpot": tpot, "t_step": tdec, "ttft": ttft, "users": users, "valid": valid,
            "request": request, "prealloc": prealloc, "prefill_wait": wait, "prefill": p["own"], "transfer": exposed,
            "transfer_full": move, "handoff": handoff, "first_step": first, "prefill_busy": p["busy"],
            "prefill_util": p["utilisation"], "link_util": u_link, "room": room}


def wave_prefill(pre: PrefillSide, users: np.ndarray, ranks: np.ndarray, i: np.ndarray | slice = slice(None)
                 ) -> np.ndarray:
    """Mean prefill time (wait + own) of `users` prompts released at once onto `ranks` prefill ranks of plans `i`,
    FCFS in steps of the budget: n = users I / (ranks B) steps, the j-th prompt done at step j, (n + 1) / 2 steps
    on average (`serving._first_round`, without decodes to ride along); a wave that fits one step takes one step of
    its tokens."""
    tokens = users * pre.prompt / ranks
    c, B, tc, tB = pre.chunk[i], pre.budget[i], pre.t_chunk[i], pre.t_full[i]
    k = np.clip(tokens, c, B)
    tk = tc + np.where(B > c, (tB - tc) / np.maximum(B - c, 1.0), 0.0) * (k - c)
    n = tokens / k
    return np.where(n > 1, (n + 1) / 2 * tB, tk)


def at_users(sol: dict[str, np.ndarray], users: np.ndarray) -> dict[str, np.ndarray]:
    """Each combo's closed loop at `users` [M] (or a scalar): interpolated between the grid's batches, or at the
    last sustainable batch with the rest of the users queued (their wait, queued / lambda, joins TTFT). Where
    N(b) dips (a batch that pads its step up serves fewer requests per second), the first batch reaching the users
    is taken (`envelope`)."""
    valid = sol["valid"]
    M, D = valid.shape
    users = np.broadcast_to(np.asarray(users, dtype=float), (M,))
    last = np.maximum(valid.sum(axis=1) - 1, 0)
    N = np.where(valid, np.maximum.accumulate(sol["users"], axis=1), np.inf)
    j = np.minimum(np.clip((N <= users[:, None]).sum(axis=1) - 1, 0, D - 1), last)
    j1 = np.minimum(j + 1, last)
    rows = np.arange(M)
    n0, n1 = sol["users"][rows, j], sol["users"][rows, j1]
    w = np.where((j1 > j) & (users > n0), np.clip((users - n0) / np.maximum(n1 - n0, 1e-12), 0, 1), 0.0)
    out = {k: v[rows, j] * (1 - w) + v[rows, j1] * w for k, v in sol.items() if k != "valid"}
    queued = np.maximum(users - out["users"], 0.0)
    out["queue"] = queued / np.maximum(out["lam"], 1e-12)
    out["ttft"] = out["ttft"] + out["queue"]
    out["queued"] = queued
    out["runs"] = valid[rows, 0].astype(float)
    return out


def envelope(sol: dict[str, np.ndarray]) -> np.ndarray:
    """[M, D]: the sustainable batches whose users no smaller batch reaches (the operating points `at_users`
    can land on)."""
    return sol["valid"] & (sol["users"] >= np.maximum.accumulate(sol["users"], axis=1))
