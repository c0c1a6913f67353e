"""Vision tower parameter estimate from `vision_config` (kept apart from the language model).

A ViT layer is attention 4*h^2 + 4*h (qkv+o with biases) + MLP 2*h*I + 2*I... (fc1/fc2 with biases)
+ 2 LayerNorms; plus the patch embedding 3*p^2*h (x temporal patch) and a projector to the text
width. This is an estimate (the count is reported, never used for serving memory of text-only runs).
"""

from __future__ import annotations

from advisor.arch.fields import Cfg


def vision_params(top: Cfg) -> int:
    vc = top.sub("vision_config")
    if vc is None:
        return 0
    layers = _first_int(vc, "vt_num_hidden_layers", "depth", "num_hidden_layers")
    hidden = _first_int(vc, "vt_hidden_size", "hidden_size")
    inter = _first_int(vc, "vt_intermediate_size", "intermediate_size") or 4 * hidden
    if not layers or not hidden:
        return 0
    per_layer = 4 * hidden * hidden + 4 * hidden + 2 * hidden * inter + inter + hidden + 4 * hidden
    patch = _first_int(vc, "patch_size") or 14
    temporal = _first_int(vc, "temporal_patch_size") or 1
    embed = 3 * patch * patch * temporal * hidden
    text = top.sub("text_config")
    out = _first_int(vc, "out_hidden_size", "text_hidden_size", "projector_output_dim") or (
        text.int("hidden_size") if text else hidden)
    merge = 4  # 2x2 spatial merge (Qwen `spatial_merge_size` 2, Kimi `merge_kernel_size` [2,2])
    projector = (hidden * merge) ** 2 + hidden * merge * out
    return layers * per_layer + embed + projector


def _first_int(cfg: Cfg, *keys: str) -> int:
    for key in keys:
        value = cfg.raw(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0
