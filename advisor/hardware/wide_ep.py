"""Wide-EP dispatch and combine: the all-to-all that sends each token to the ranks holding its experts and brings
the expert outputs back, per call on one rank, vectorised over the tokens per rank T.

Every kernel family here is a latency floor plus the bytes it moves over the slowest link it crosses, whichever
bound is tighter (the SMs issuing the copies, the fast domain's NVLink, or the NICs), every rank waiting for the
busiest (`busiest`: its load over the mean, from expert imbalance; EPLB lowers it):

    t = floor + busiest x max(SM-issue time, NVLink bytes / (share_L x L), NIC bytes / (share_N x N)) [+ network hop]

with L the fast domain's per-GPU link (the profile's NVLink P2P rate) and N the NIC bandwidth per GPU
(`nics_per_node x nic_gbps / gpus_per_node`). Of R ranks in groups of m per fast domain, a copy goes to its own rank
with probability 1/R, over NVLink (m - 1)/R, over the NICs (R - m)/R (uniform routing).

DeepEP low-latency (`csrc/kernels/internode_ll.cu`, SGLang's decode path, vLLM `deepep_low_latency`): one message per
(token, expert), no deduplication, T k per rank; dispatch messages are FP8 with a float scale per 128 elements and a
16-byte header (`hidden + hidden / 128 x 4 + 16` bytes; DeepEP `tests/test_low_latency.py` counts the same bytes),
combine messages BF16 (`2 hidden`). The dispatch kernel gives one warp group to each expert, `ceil(E / SMs)` groups
per SM, so it runs on `ceil(E / ceil(E / SMs))` SMs, each casting and sending one token row after another:
`ceil(T / SMs_used) x hidden / r_row`; the combine sends each expert's `T k / E` rows back from one warp group:
`(T k / E) x 2 hidden / r_group`. Floor: `a x` the domain's measured NCCL all-gather floor `+ c x` local experts.

DeepEP normal (`csrc/kernels/intranode.cu` / `internode.cu`, SGLang's prefill path, vLLM `deepep_high_throughput`):
each token goes once to each distinct rank among its top-k (`D = R (1 - C(E - E/R, k) / C(E, k))` of R), FP8 with
scales (`hidden + hidden / 128 x 4`; the collector keeps the FP8 rows, aiconfigurator `collector/deep_collector/
extract_data.py`) and BF16 back; `num_sms` SMs make `num_sms / 2` channels (even SMs send, odd receive), each
copying at `r_channel`: `T D B / (num_sms / 2 x r_channel)`. A rank receives T D copies; all but those from itself
and, across nodes, from the same-index GPU of each other node (RDMA lands there directly, then NVLink forwards)
cross NVLink: (m - 1) / m of them. Engines give it 20 SMs (DeepEP `Buffer.num_sms`; vLLM
`all2all.py: DeepEPAll2AllManagerBase.num_sms = 20`; SGLang `token_dispatcher/deepep.py: DeepEPConfig` takes
`Buffer.num_sms` unless `--deepep-config` says otherwise). Floor: `a x` the domain's measured NCCL all-to-all floor
(the notify round that exchanges the counts before the data). Across nodes a token crosses each distinct remote node
once (RDMA to the same-index GPU there, then NVLink).

The fitted numbers (`wide_ep_params.json`, by `scripts/scaleout_fit.py`) are physically named and shared by
every GPU: the floor ratios, the per-local-expert latency, the achievable link shares, the per-SM / per-channel copy
rates; the NVLink shares and copy rates come from DeepEP's single-node tables (aiconfigurator, SGLang 0.5.12), the
NIC share of each mode from DeepEP's own multi-node README figures, and TensorRT-LLM's one-sided all-to-all
(`one_sided_us`) from NVIDIA's published GB200 NVL72 figures for it (TensorRT-LLM tech blog 18).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from math import comb
from pathlib import Path

import numpy as np

PARAMS = Path(__file__).with_name("wide_ep_params.json")
DEEPEP_NUM_SMS = 20  # deep_ep/buffer.py Buffer.num_sms; vLLM and SGLang keep it (module docstring)
FP8_SCALE_BYTES = 4 / 128  # one float32 scale per 128 elements (DeepEP per_token_cast_to_fp8)
LL_HEADER_BYTES = 16  # internode_ll.cu: each dispatch message starts with an int4 (source token index)
# SMs per GPU, used only for DeepEP low-latency's SM count when experts exceed it: H100 SXM5 132
# (https://glennklockwood.com/garden/processors/h100), B200 148 ("B200 enables 74 SMs per die, giving 148",
# Chips and Cheese, https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut). Others: the smallest
# of these; with up to 128 experts the kernel uses E SMs on every GPU here, whatever the count.
DEVICE_SMS = {"sm90": 132, "sm100": 148}
MIN_DEVICE_SMS = 132


@dataclass(frozen=True)
class MoEShape:
    """What a dispatch moves: `hidden` elements per token, `topk` experts per token out of `experts`."""

    hidden: int
    topk: int
    experts: int


@dataclass(frozen=True)
class EPLinks:
    """The links an EP group of `ranks` ranks crosses: `per_domain` of them share one fast domain (NVLink at
    `fast_gbps` per GPU per direction), the rest are over NICs at `nic_gbps` per GPU per direction with
    `net_latency_us` per hop. `ag_floor_us` / `a2a_floor_us`: the domain's measured NCCL all-gather / all-to-all
    floor (the smallest message's time, `hardware/comm.py` terms). `device_sms`: SMs per GPU."""

    ranks: int
    per_domain: int
    fast_gbps: float
    ag_floor_us: float
    a2a_floor_us: float
    nic_gbps: float = 0.0
    net_latency_us: float = 0.0
    device_sms: int = MIN_DEVICE_SMS

    @property
    def crosses_nics(self) -> bool:
        return self.ranks > self.per_domain


@lru_cache(maxsize=1)
def params() -> dict:
    """The fitted parameters and their source (`wide_ep_params.json`)."""
    return json.loads(PARAMS.read_text(encoding="utf-8"))


def distinct_ranks(experts: int, topk: int, ranks: int) -> float:
    """Expected distinct ranks a token's top-k experts fall on, experts spread evenly over `ranks`:
    R (1 - C(E - E/R, k) / C(E, k)) (k distinct experts drawn uniformly)."""
    if ranks <= 1:
        return 1.0
    per = experts // ranks
    return ranks * (1.0 - comb(experts - per, topk) / comb(experts, topk))


def dispatch_bytes(mode: str, hidden: int) -> float:
    """Bytes of one dispatched token copy: FP8 + scales (+ the low-latency header)."""
    return hidden * (1 + FP8_SCALE_BYTES) + (LL_HEADER_BYTES if mode == "ll" else 0)


def ll_sms(experts: int, device_sms: int) -> int:
    """SMs DeepEP's low-latency dispatch runs on: one warp group per expert, ceil(E / SMs) groups per SM
    (`internode_ll.cu: dispatch`, `num_warp_groups = ceil_div(num_experts, num_device_sms)`)."""
    groups = -(-experts // device_sms)
    return -(-experts // groups)


def busiest_factor(tokens: np.ndarray | float, topk: int, ranks: int) -> np.ndarray:
    """Busiest rank's copies over the mean, uniform routing: the expected maximum of R Poisson loads of mean
    mu = T k (each rank receives T k copies from all ranks), 1 + sqrt(2 ln R / mu) (as `cost/step.py:
    busiest_rank_pairs`). Skewed routing raises it, EPLB's redundant experts bring it back toward this."""
    mu = np.maximum(np.asarray(tokens, dtype=float) * topk, 1.0)
    return 1.0 + np.sqrt(2.0 * np.log(max(ranks, 1)) / mu)


def _shares(links: EPLinks) -> tuple[float, float]:
    """(fraction of a rank's copies that go over NVLink to another rank, fraction that go over NICs)."""
    R, m = links.ranks, min(links.per_domain, links.ranks)
    return (m - 1) / R, (R - m) / R


def _net(links: EPLinks, share: float) -> tuple[float, float]:
    """(NIC GB/s per GPU as the kernel achieves it, the hop latency) when the group crosses NICs, else (inf, 0)."""
    if not links.crosses_nics:
        return float("inf"), 0.0
    if links.nic_gbps <= 0:
        raise ValueError("an EP group across fast domains needs NIC bandwidth (nic_gbps)")
    return links.nic_gbps * share, links.net_latency_us


def ll_us(direction: str, tokens: np.ndarray | float, moe: MoEShape, links: EPLinks,
          busiest: np.ndarray | float = 1.0, fit: dict | None = None) -> np.ndarray:
    """DeepEP low-latency dispatch or combine on one rank (module docstring), microseconds. `fit`: parameters to
    use instead of the shipped ones (the fitting script's)."""
    mode = fit or params()["ll"]
    p = mode[direction]
    T = np.asarray(tokens, dtype=float)
    h, k, E, R = moe.hidden, moe.topk, moe.experts, links.ranks
    B = dispatch_bytes("ll", h) if direction == "dispatch" else 2.0 * h
    nvl, nic = _shares(links)
    nic_gbps, hop = _net(links, mode["nic_share"])
    vol = T * k * B * busiest
    link = np.maximum(vol * nvl / (p["link_share"] * links.fast_gbps * 1e3), vol * nic / (nic_gbps * 1e3))
    if direction == "dispatch":
        issue = np.ceil(T / ll_sms(E, links.device_sms)) * h / (p["sm_row_gbps"] * 1e3)
    else:
        issue = T * k / E * 2.0 * h * busiest / (p["warp_group_gbps"] * 1e3)
    floor = p["floor_ag_ratio"] * links.ag_floor_us + p["floor_us_per_local_expert"] * E / R
    return floor + hop + np.maximum(link, issue)


def normal_us(direction: str, tokens: np.ndarray | float, moe: MoEShape, links: EPLinks,
              busiest: np.ndarray | float = 1.0, num_sms: int = DEEPEP_NUM_SMS, fit: dict | None = None,
              domains_per_token: float | None = None) -> np.ndarray:
    """DeepEP normal (high-throughput) dispatch or combine on one rank (module docstring), microseconds.
    `domains_per_token`: fast domains a token reaches (default: uniform routing; DeepSeek's node-limited routing caps
    it at 4)."""
    mode = fit or params()["normal"]
    p = mode[direction]
    T = np.asarray(tokens, dtype=float)
    h, k, E, R = moe.hidden, moe.topk, moe.experts, links.ranks
    B = dispatch_bytes("normal", h) if direction == "dispatch" else 2.0 * h
    D = distinct_ranks(E, k, R)
    issue = T * D * B / (num_sms / 2 * p["channel_gbps"] * 1e3)
    m = min(links.per_domain, R)  # copies reach a rank over NVLink unless sent by itself or, across nodes, by the
    nvl = T * B * busiest * D * (m - 1) / m / (p["link_share"] * links.fast_gbps * 1e3)  # same-index GPU (RDMA)
    nic_gbps, hop = _net(links, mode["nic_share"])
    nic = np.zeros_like(T)
    if links.crosses_nics:
        K = R / links.per_domain
        nodes = domains_per_token if domains_per_token is not None else \
            K * (1.0 - comb(E - E * links.per_domain // R, k) / comb(E, k))  # distinct domains per token
        nic = T * B * busiest * nodes * (K - 1) / K / (nic_gbps * 1e3)
    floor = p["floor_a2a_ratio"] * links.a2a_floor_us
    return floor + 2 * hop + np.maximum(np.maximum(issue, nvl), nic)


def one_sided_us(direction: str, tokens: np.ndarray | float, moe: MoEShape, links: EPLinks,
                 busiest: np.ndarray | float = 1.0, elem_bytes: float | None = None, fit: dict | None = None
                 ) -> np.ndarray:
    """TensorRT-LLM's NVLink one-/two-sided all-to-all (`_torch/modules/fused_moe/communication/nvlink_one_sided.py`,
    `nvlink_two_sided.py`): each token goes once to each distinct rank among its top-k ("each token is dispatched to
    at most top_k target ranks", TensorRT-LLM tech blog 18), over NVLink only (MNNVL symmetric memory):
    `floor + per-rank floor x R + T D hidden bytes (R - 1)/R / (share x L)`. The per-rank floor is the flag barrier
    each kernel ends (dispatch) or starts (combine) with, a write to and a poll of every peer (blog 18,
    "Synchronization"). Fitted on the blog's GB200 NVL72 figures (`scripts/scaleout_fit.py: BLOG18_ONE_SIDED`); the
    two-sided kernel, with no published figures, is timed the same (an analogue). `elem_bytes`: per element
    (dispatch FP8 with scales by default: the kernel moves the quantized activations; combine BF16). `fit`: the
    parameters of one direction (the fitter's)."""
    if links.crosses_nics:
        raise ValueError("TensorRT-LLM's NVLink all-to-all runs inside one NVLink domain only")
    p = fit if fit is not None else params()["one_sided"][direction]
    T = np.asarray(tokens, dtype=float)
    h, k, E, R = moe.hidden, moe.topk, moe.experts, links.ranks
    b = elem_bytes if elem_bytes is not None else (1 + FP8_SCALE_BYTES if direction == "dispatch" else 2.0)
    D = distinct_ranks(E, k, R)
    vol = T * D * h * b * busiest * (R - 1) / R
    return p["floor_us"] + p["floor_us_per_rank"] * R + vol / (p["link_share"] * links.fast_gbps * 1e3)
