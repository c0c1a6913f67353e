"""Speculative decoding with the model's own MTP (multi-token prediction) heads.

Each decode step, the MTP module drafts k tokens one after another (k passes of its one decoder layer; vLLM
`spec_decode/` with `method: mtp` reuses the layer when k exceeds the checkpoint's MTP layers), then the target
model verifies the k + 1 positions in one forward (`v1/spec_decode/eagle.py`, `v1/sample/rejection_sampler.py`).
A step yields the acceptance length AL(k) tokens per sequence: 1 + the expected accepted prefix of the drafts.
With a per-position acceptance a (the chance a drafted token is accepted given the ones before it were),
AL(k) = 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a).

Costs (`cost/step.py`, `cost/serving.py`): the verify forward carries (k + 1) tokens per sequence through the
GEMMs and MoE (weights read once, more experts touched, k + 1 times the FLOPs), its attention reads each
sequence's KV once for k + 1 queries; the draft is k passes of one decoder layer at the batch (an average
layer of the model, the MTP layer's own lm_head share included); the MTP weights are in memory. It helps when
a step is bound by weight reads and fixed time (few users) and can hurt when compute-bound (many users).
"""

from __future__ import annotations

from collections.abc import Sequence

_QWEN35_AL = (1.93, 2.73, 3.39, 3.97, 4.41, 4.80, 5.04, 5.21)
_QWEN35_SOURCE = ("SemiAnalysisAI/InferenceX golden_al_distribution/qwen3.5_mtp.yaml (commit ab51b0612, Apache-2.0): "
                  "mean acceptance length for 1-8 MTP tokens, SPEED-Bench coding prompts, thinking on, measured "
                  "with vLLM on nvidia/Qwen3.5-397B-A17B-NVFP4 (B300)")

# Acceptance lengths AL(1), AL(2), ... where a public figure exists, with its source; any other model needs
# --spec-acceptance (no default is invented). A figure holds for the prompts it was measured on.
PUBLISHED_ACCEPTANCE: dict[str, tuple[tuple[float, ...], str]] = {
    "deepseek-ai/DeepSeek-V3": ((1.85,), "DeepSeek-V3 Technical Report (arXiv:2412.19437) sec. 5.4.3: the "
                                         "acceptance rate of the second-token prediction is between 85% and 90% "
                                         "(lower end)"),
    "Qwen/Qwen3.5-397B-A17B": (_QWEN35_AL, _QWEN35_SOURCE),
    "nvidia/Qwen3.5-397B-A17B-NVFP4": (_QWEN35_AL, _QWEN35_SOURCE),
}


def acceptance_length(k: int, lengths: Sequence[float]) -> float:
    """AL(k) from the published AL(1..K): read where published; beyond K each further position adds the last
    increment times the last ratio of increments (AL(0) = 1; one figure: ratio a = AL(1) - 1, the closed form)."""
    if k <= 0:
        return 1.0
    if k <= len(lengths):
        return float(lengths[k - 1])
    al = [1.0, *lengths]
    inc = al[-1] - al[-2]
    ratio = inc / (al[-2] - al[-3]) if len(al) > 2 else inc
    ratio = min(max(ratio, 0.0), 1.0)
    return al[-1] + sum(inc * ratio ** j for j in range(1, k - len(lengths) + 1))


def acceptance_for(model: str, given: float | None) -> tuple[tuple[float, ...] | None, str]:
    """The acceptance lengths to use and where they come from: the user's per-position acceptance a (as
    AL(1) = 1 + a), else a published figure, else None."""
    if given is not None:
        return (1.0 + given,), "--spec-acceptance"
    if model in PUBLISHED_ACCEPTANCE:
        return PUBLISHED_ACCEPTANCE[model]
    return None, "no published acceptance for this model: give --spec-acceptance"
