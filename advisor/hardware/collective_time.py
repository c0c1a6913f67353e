"""The one entry for the time of a collective on a cluster: NCCL collectives (`hardware/scaleout.py`: the node's
measured terms inside a fast domain, the fabric across domains) and wide-EP dispatch/combine
(`hardware/ep_exchange.py`)."""

from __future__ import annotations

import numpy as np

from advisor.errors import AdvisorError
from advisor.hardware.cluster import Cluster, Span
from advisor.hardware.ep_exchange import exchange_us
from advisor.hardware.scaleout import OPS, _span, nccl_time_us


def collective_time_us(cluster: Cluster, op: str, nbytes: float | np.ndarray, group: Span | int,
                       engine: str = "vllm", backend: str | None = None, **ep: object) -> np.ndarray:
    """Microseconds of one collective of `nbytes` (nccl-tests size; for dispatch/combine what one rank sends,
    T x topk x hidden x bytes per element) over `group` (a `Span`, or n ranks packed from GPU 0), vectorised over
    nbytes. Inside one fast domain: the node's measured terms (`comm.py`, unchanged on one node). Across domains:
    the fabric (`scaleout.py`). `op` "dispatch"/"combine": wide-EP all-to-all by `backend` (default: the
    engine's, `a2a_backends.default_backend`), keywords `moe` (a `wide_ep.MoEShape`, required), `phase`
    ("decode"/"prefill"), `busiest` (load factor), `elem_bytes` (bytes per dispatched element)."""
    if op not in OPS:
        raise AdvisorError(f"collective op {op!r}: expected one of {', '.join(OPS)}")
    S = np.asarray(nbytes, dtype=float)
    span = _span(cluster, group)
    if span.gpus <= 1:
        return np.zeros_like(S)
    if op in ("dispatch", "combine"):
        return exchange_us(cluster, op, S, span, engine, backend, **ep)  # type: ignore[arg-type]
    return nccl_time_us(cluster, op, S, span, engine)
