"""What more nodes buy, from the numbers: which collectives cross which link and what share of the step they cost
(`link_shares`, the why-line on a cluster), and the one-box owner's question (`scale_out`): does a second node
help a model, with which plan, at one user and at the asked load, against one node and against copies of the
one-node plan.

A plan on fewer GPUs than the cluster runs as independent copies (`capacity.replicas`): at U users in total each
of r copies serves U / r of them, so the copies' throughput is r x the plan's tok/s at U / r users (evaluated at
exactly that load, not read off the grid).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from advisor.cost.collectives import Collective
from advisor.cost.prediction import Prediction
from advisor.cost.step import comm_fn
from advisor.cost.sweep import Case, evaluate, link_of

if TYPE_CHECKING:
    from advisor.cost.terms import Terms
    from advisor.cost.workload import Settings
    from advisor.decide.query import Query
    from advisor.decide.ranked import RankedPlan
    from advisor.hardware import HardwareProfile
    from advisor.hardware.cluster import Cluster
    from advisor.resolve import Resolved


def _change(new: float, old: float) -> str:
    """A relative change in words: "+44%", "-3%", or "the same" within half a percent."""
    r = new / old - 1
    return "the same" if abs(r) < 0.005 else f"{r:+.0%}"


def _users(n: int) -> str:
    return f"{n:,} user" + ("" if n == 1 else "s")


def collective_seconds(case: Case, c: Collective, tokens: float) -> float:
    """Seconds of one forward's calls of collective `c` at `tokens` (padded) tokens per DP rank, on the case's
    cluster (the same timer the step uses, `cost/step.py: comm_fn`)."""
    comm = comm_fn(case.hw, case.args.engine, case.cluster)
    units = {"tokens": tokens, "dp_tokens": tokens * case.plan.dp, "sampled": max(tokens, 1.0), "fixed": 1.0}
    nbytes = np.array([units[c.slot.scales_with] * c.bytes_per_unit])
    moe = case.arch.moe
    shape = (case.arch.hidden_size, moe.experts_per_token, moe.num_experts) if moe is not None else None
    wide = c.domains > 1 or c.slot.backend is not None  # across the NICs, or an expert all-to-all (per MoE shape)
    t = comm(c.op, nbytes, c.group, c.domains, c.slot.backend, shape) if wide else comm(c.op, nbytes, c.group)
    return float(c.calls * t[0])


def link_shares(d: Prediction, case: Case) -> str | None:
    """On a cluster: the collectives of the step by the link they cross, each link's time (the prediction's own
    communication time, split in proportion to each collective's modelled time at the running batch) and share of
    the decode step, the costliest collective on it named; None on one node or without collectives."""
    if case.cluster is None or not d.breakdown_ms or d.running_sequences is None:
        return None
    tokens = max(d.running_sequences // max(case.plan.dp, 1), 1)
    times = [(c, collective_seconds(case, c, tokens)) for c in case.collectives if c.group > 1]
    total = sum(t for _, t in times)
    if total <= 0:
        return None
    comm_ms, step_ms = d.breakdown_ms["comm"], sum(d.breakdown_ms.values())
    by_link: dict[str, list[tuple[Collective, float]]] = {}
    for c, t in times:
        by_link.setdefault(link_of(case.cluster, c.domains) or "", []).append((c, t * comm_ms / total))
    parts = []
    for link, items in sorted(by_link.items(), key=lambda kv: -sum(t for _, t in kv[1])):
        ms = sum(t for _, t in items)
        top = max(items, key=lambda ct: ct[1])[0]
        parts.append(f"over {link}: {ms:.1f} ms ({ms / step_ms:.0%} of the step), most of it {top.cause}")
    return "; ".join(parts)


def _best(cases: list[Case], terms: Terms, users: float, key: str, input_len: int, output_len: int
          ) -> tuple[Case, float, Prediction] | None:
    """The case with the most `key` at `users` (one evaluation of every case), its value and its prediction there."""
    if not cases:
        return None
    sweep = evaluate(cases, terms, np.array([float(users)]), np.array([float(input_len)]),
                     np.array([float(output_len)]))
    v = sweep.out[key][:, 0, 0]
    i = int(np.argmax(v))
    return cases[i], float(v[i]), sweep.at(i, int(users))


def _copies(case: Case, cluster: Cluster, terms: Terms, users: int, input_len: int, output_len: int
            ) -> tuple[int, float]:
    """(copies the cluster holds that the users keep busy, at least one user each; their total tok/s at `users`
    users in all, spread evenly)."""
    r = max(min(cluster.gpus // case.plan.gpus, users), 1)
    per = users / r
    sweep = evaluate([case], terms, np.array([per]), np.array([float(input_len)]), np.array([float(output_len)]))
    return r, r * float(sweep.out["output_tok_s"][0, 0, 0])


def scale_out(model: str, one: list[Case], many: list[Case], cluster: Cluster, terms: Terms, users: int,
              input_len: int, output_len: int) -> str | None:
    """Whether the cluster's extra nodes help `model` (runnable cases on one node: `one`; on the cluster: `many`),
    at one user and at `users` users: one node, copies of the one-node plan, or one deployment across the nodes,
    the best named, and where the spanning plan's collectives spend their time (`link_shares`)."""
    spanning = [c for c in many if cluster.nodes_for(c.plan.gpus) > 1]
    if not spanning and not one:
        return None
    parts = []
    lat1 = _best(one, terms, 1, "per_user_tok_s", input_len, output_len)
    latn = _best(spanning, terms, 1, "per_user_tok_s", input_len, output_len)
    if lat1 and latn:
        parts.append(f"at one user {latn[1]:.1f} tok/s across the nodes ({latn[0].plan.label()}) against "
                     f"{lat1[1]:.1f} on one node ({lat1[0].plan.label()}), {_change(latn[1], lat1[1])}")
    elif latn:
        parts.append(f"it needs more than one node: {latn[1]:.1f} tok/s at one user ({latn[0].plan.label()})")
    load1 = _best(one, terms, users, "output_tok_s", input_len, output_len)
    loadn = _best(spanning, terms, users, "output_tok_s", input_len, output_len)
    options: list[tuple[float, str]] = []
    if load1:
        options.append((load1[1], f"one node ({load1[0].plan.label()})"))
        r, tok = _copies(load1[0], cluster, terms, users, input_len, output_len)
        each = f"{users // r:,}" if users % r == 0 else f"{users // r:,}-{users // r + 1:,}"  # whole users
        options.append((tok, f"{r} copies of {load1[0].plan.label()} ({each} users each)"))
    if loadn:
        options.append((loadn[1], f"{loadn[0].plan.label()} across the nodes"))
    if options:
        best = max(options, key=lambda o: o[0])
        base = options[0][0] if load1 else best[0]
        parts.append(f"at {_users(users)}: " + ", ".join(f"{name} {tok:,.0f} tok/s" for tok, name in options)
                     + f"; best {best[1]}" + (f", {_change(best[0], base)} over one node" if load1 else ""))
    if loadn and (shares := link_shares(loadn[2], loadn[0])):
        parts.append(f"{loadn[0].plan.label()}'s step at {_users(users)}: {shares}")
    head = f"{model} on {cluster.describe()}"
    return f"{head}: " + "; ".join(parts) + "." if parts else None


def with_scale_out(rows: list[RankedPlan], resolved: list[Resolved], hw: HardwareProfile, settings: Settings,
                   terms: Terms, q: Query, cluster: Cluster | None) -> list[RankedPlan]:
    """Each row of a ranking on a multi-node cluster with its `scale_out` sentence (rows unchanged otherwise)."""
    if cluster is None or not cluster.multi_node:
        return rows
    from advisor.cost.sweep import all_cases

    by_model = {r.arch.model: r for r in resolved}
    said: dict[str, str | None] = {}
    for r in by_model.values():
        one = [c for c in all_cases(r.arch, hw, settings, source=r.source) if c.runs]
        many = [c for c in all_cases(r.arch, hw, settings, source=r.source, cluster=cluster) if c.runs]
        said[r.arch.model] = scale_out(r.arch.model, one, many, cluster, terms, q.concurrency, q.input_len,
                                       q.output_len)
    return [row.model_copy(update={"scale_out": said.get(row.model)}) for row in rows]
