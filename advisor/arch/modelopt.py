"""NVIDIA ModelOpt per-layer (MIXED_PRECISION) schemes: `quantized_layers` maps each quantized module to its
own `quant_algo`; a module not listed keeps the checkpoint's base format (vLLM `quantization/modelopt.py`:
`ModelOptMixedPrecisionConfig` quantizes the listed layers only).

Module names differ by family (`model.layers.N.`, `backbone.layers.N.mixer.`, `language_model.model.layers.N.`,
`layers.N.ffn.experts`); only the layer number and the role the name components give are kept (`role`),
so the reader can ask for (layer, role) whatever the naming. A role with several formats in one layer takes
the most frequent. MTP modules (`mtp.` names) are left out.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from advisor.arch.fields import Cfg, ConfigError, shown

# ModelOpt quant_algo -> storage format (bytes in formats.py). W4A16_NVFP4 stores NVFP4 weights (FP8 scale per
# 16) and keeps activations 16-bit: same bytes as NVFP4.
_ALGO = {"NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8",
         "FP8_PB_WO": "fp8-block", "FP8_BLOCK": "fp8-block", "MXFP8": "mxfp8", "MXFP4": "mxfp4",
         "W4A8_MXFP4_FP8": "mxfp4"}
_MLP_NAMES = {"gate_proj", "up_proj", "down_proj", "gate_up_proj", "fc1", "fc2", "w1", "w2", "w3"}
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.(.+)$")


def role(path: str) -> str:
    """Role of a module named after its `layers.N.` prefix, by its name components only: shared expert,
    routed experts, LatentMoE projection, dense MLP projection, else the layer's mixer."""
    parts = path.lower().split(".")
    if any(p.startswith("shared_expert") for p in parts):
        return "shared"
    if "experts" in parts:
        return "experts"
    if any("latent_proj" in p or p.startswith("routed_expert_") for p in parts):
        return "latent"
    if parts[-1] in _MLP_NAMES and not any("attn" in p or "attention" in p for p in parts):
        return "mlp"
    return "mixer"


def algo_format(where: str, algo: str, group_size: Any = None) -> str:
    """Storage format of one ModelOpt `quant_algo`; an algorithm not modelled is one clear error."""
    algo = algo.upper()
    if algo in _ALGO:
        return _ALGO[algo]
    if algo in ("W4A16_AWQ", "W4A8_AWQ", "INT4_AWQ"):
        return f"int4-g{group_size if isinstance(group_size, int) and group_size > 0 else 128}"
    raise ConfigError(f"{where}: ModelOpt quant_algo {shown(algo)} is not modelled")


def layer_formats(qc: Cfg) -> tuple[tuple[int, str, str], ...]:
    """(layer, role, format) rows of `quantized_layers`; layer -1 is the LM head."""
    listed = qc.dict("quantized_layers")
    if not listed:
        raise ConfigError(f"{qc.where}: quant_algo MIXED_PRECISION without 'quantized_layers'")
    votes: Counter[tuple[int, str, str]] = Counter()
    for name, spec in listed.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"{qc.where}: field 'quantized_layers' entry {shown(name)} must be an object")
        fmt = algo_format(f"{qc.where}: quantized_layers {shown(name)}", str(spec.get("quant_algo", "")),
                          spec.get("group_size"))
        parts = name.split(".")
        if "mtp" in parts:
            continue
        match = _LAYER.search(name)
        if match:
            votes[(int(match[1]), role(match[2]), fmt)] += 1
        elif parts[-1] in ("lm_head", "head"):
            votes[(-1, "lm_head", fmt)] += 1
    best: dict[tuple[int, str], str] = {}
    for (layer, kind, fmt), _count in votes.most_common():
        best.setdefault((layer, kind), fmt)
    return tuple(sorted((layer, kind, fmt) for (layer, kind), fmt in best.items()))


def group_size(qc: Cfg) -> int | None:
    """The NVFP4/MX group size: the scheme's `group_size`, else the first listed layer's."""
    if qc.has("group_size"):
        return qc.int("group_size")
    for spec in (qc.dict("quantized_layers") or {}).values():
        if isinstance(spec, dict) and isinstance(spec.get("group_size"), int) and spec["group_size"] > 0:
            return int(spec["group_size"])
    return None
