"""Speculative decoding with the model's own MTP (multi-token prediction) heads.

Each decode step, the MTP module drafts k tokens one after another (k passes of its one decoder layer; vLLM
`spec_decode/` with `method: mtp` reuses the layer when k exceeds the checkpoint's MTP layers), then the target
model verifies the k + 1 positions in one forward (`v1/spec_decode/eagle.py`, `v1/sample/rejection_sampler.py`).
With a per-position acceptance a (the chance a drafted token is accepted given the ones before it were), a step
yields E = 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a) tokens per sequence.

Costs (`cost/step.py`, `cost/serving.py`): the verify forward carries (k + 1) tokens per sequence through the
GEMMs and MoE (weights read once, more experts touched, k + 1 times the FLOPs), its attention reads each
sequence's KV once for k + 1 queries; the draft is k passes of one decoder layer at the batch (an average
layer of the model, the MTP layer's own lm_head share included); the MTP weights are in memory. It helps when
a step is bound by weight reads and fixed time (few users) and can hurt when compute-bound (many users).
"""

from __future__ import annotations

# Acceptance of MTP drafts where a public figure exists, with its source; any other model needs
# --spec-acceptance (no default is invented).
PUBLISHED_ACCEPTANCE: dict[str, tuple[float, str]] = {
    "deepseek-ai/DeepSeek-V3": (0.85, "DeepSeek-V3 Technical Report (arXiv:2412.19437) sec. 5.4.3: the acceptance "
                                      "rate of the second-token prediction is between 85% and 90% (lower end)"),
}


def tokens_per_step(k: int, acceptance: float) -> float:
    """Expected tokens a sequence gains per step with k drafted tokens: (1 - a^(k+1)) / (1 - a)."""
    if k <= 0:
        return 1.0
    if acceptance >= 1.0:
        return float(k + 1)
    return (1 - acceptance ** (k + 1)) / (1 - acceptance)


def acceptance_for(model: str, given: float | None) -> tuple[float | None, str]:
    """The acceptance to use and where it comes from: the user's, else a published figure, else None."""
    if given is not None:
        return given, "--spec-acceptance"
    if model in PUBLISHED_ACCEPTANCE:
        return PUBLISHED_ACCEPTANCE[model]
    return None, "no published acceptance for this model: give --spec-acceptance"
