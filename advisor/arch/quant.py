"""Which storage format each module gets, from `quantization_config` or a ModelOpt sidecar.

Ignore-list semantics follow vLLM: compressed-tensors `ignore` entries are exact names or `re:` regexes
(`compressed_tensors.py:should_ignore_layer`); ModelOpt `exclude_modules` are glob patterns
(`modelopt.py:is_layer_excluded`); `modules_to_not_convert` entries match a run of name components
(`quant_utils.py:is_layer_skipped`). MXFP4 quantizes only FusedMoE experts (`mxfp4.py:get_quant_method`).
"""

from __future__ import annotations

import fnmatch
import re
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from advisor.arch import modelopt
from advisor.arch.fields import Cfg, ConfigError


class QuantScheme(BaseModel):
    """Format rules of one checkpoint: `fmt` for quantizable linear layers, bf16 for the rest."""

    model_config = ConfigDict(frozen=True)

    fmt: str = "bf16"
    experts_only: bool = False
    ignore: tuple[str, ...] = ()
    block: tuple[int, int] | None = None
    group_size: int | None = None
    kv_fp8: bool = False
    expert_fmt: str | None = None  # routed experts stored apart (DeepSeek-V4 `expert_dtype` fp4 -> MXFP4)
    # ModelOpt MIXED_PRECISION `quantized_layers`: (layer or -1, role, format); a listed role wins over `fmt`
    layer_formats: tuple[tuple[int, str, str], ...] = ()

    @property
    def per_layer(self) -> bool:
        return bool(self.layer_formats)

    def format_for(self, module: str, *, expert: bool = False, group: str | None = None,
                   layer: int | None = None) -> str:
        """Storage format of a linear module named like HF (`model.layers.3.self_attn.q_proj`); with
        per-layer formats, of reader group `group` in decoder layer `layer` (None: lm_head)."""
        if self.layer_formats and group is not None:
            listed = _LayerFormats.of(self.layer_formats).get(-1 if layer is None else layer, role_of_group(group))
            if listed is not None:
                return listed
            if self.fmt == "bf16" or group == "lm_head":  # not listed: not quantized by the per-layer pass
                return "bf16"
        if self.fmt == "bf16" or (self.experts_only and not expert):
            return "bf16"
        if self.ignore and _Ignore.of(self.ignore).matches(module):
            return "bf16"
        return self.expert_fmt if expert and self.expert_fmt else self.fmt


# Reader groups -> roles of ModelOpt `quantized_layers` names (see `_role`)
_GROUP_ROLES = {"routed_experts": "experts", "shared_experts": "shared", "dense_mlp": "mlp", "moe_latent": "latent",
                "lm_head": "lm_head"}
def role_of_group(group: str) -> str:
    """The role of a reader weight group: attention-like mixers (softmax, MLA, linear, mamba) are "mixer"."""
    return _GROUP_ROLES.get(group, "mixer")


class _LayerFormats:
    """`layer_formats` as a lookup (layer, role) -> format, built once per scheme."""

    def __init__(self, rows: tuple[tuple[int, str, str], ...]):
        self.table = {(layer, role): fmt for layer, role, fmt in rows}

    @staticmethod
    @cache
    def of(rows: tuple[tuple[int, str, str], ...]) -> _LayerFormats:
        return _LayerFormats(rows)

    def get(self, layer: int, role: str) -> str | None:
        return self.table.get((layer, role))


def _names_of(module: str) -> tuple[str, ...]:
    return module, f"language_model.{module}", f"model.language_model.{module.removeprefix('model.')}"


class _Ignore:
    """An ignore list compiled once into three regexes (`_matches` semantics, one pattern at a time, was
    ~1 s per config for the 284-entry Qwen3-235B-FP8 list): `re:` prefixes, whole-name globs, and globs
    over a run of name components. Globs with `[` classes keep the per-pattern path."""

    def __init__(self, patterns: tuple[str, ...]):
        regexes = [p[3:] for p in patterns if p.startswith("re:")]
        globs = [p for p in patterns if not p.startswith("re:") and "[" not in p]
        self.slow = [p for p in patterns if not p.startswith("re:") and "[" in p]
        self.rx = _alternation(regexes)
        if self.rx is None and regexes:  # inline flags cannot sit inside an alternation
            self.slow += [f"re:{r}" for r in regexes]
        self.full = _alternation([fnmatch.translate(g) for g in globs])
        runs = [r"\.".join(_component(c) for c in g.split(".")) for g in globs]
        self.run = re.compile(rf"(?:^|\.)(?:{'|'.join(runs)})(?:\.|$)") if runs else None

    @staticmethod
    @cache
    def of(patterns: tuple[str, ...]) -> _Ignore:
        return _Ignore(patterns)

    def matches(self, module: str) -> bool:
        for name in _names_of(module):
            if (self.rx and self.rx.match(name)) or (self.full and self.full.match(name)) or (
                    self.run and self.run.search(name)):
                return True
        return any(_matches(p, module) for p in self.slow)


def _alternation(regexes: list[str]) -> re.Pattern[str] | None:
    if not regexes:
        return None
    try:
        return re.compile("|".join(f"(?:{r})" for r in regexes))
    except re.error:
        return None


def _component(glob: str) -> str:
    """One name component's glob as a regex that cannot cross a `.` (fnmatch on a single component)."""
    return "".join("[^.]*" if ch == "*" else "[^.]" if ch == "?" else re.escape(ch) for ch in glob)


def _matches(pattern: str, module: str) -> bool:
    names = _names_of(module)
    if pattern.startswith("re:"):
        rx = re.compile(pattern[3:])
        return any(rx.fullmatch(n) or rx.match(n) for n in names)
    for name in names:
        if name == pattern or fnmatch.fnmatchcase(name, pattern):
            return True
        parts = name.split(".")
        want = pattern.split(".")
        for i in range(len(parts) - len(want) + 1):
            if all(fnmatch.fnmatchcase(p, w) for p, w in zip(parts[i:i + len(want)], want, strict=True)):
                return True
    return False


def parse_quant(cfg: Cfg, sidecar: dict[str, Any] | None) -> QuantScheme:
    """The checkpoint's quantization scheme; a ModelOpt sidecar is used when the config has none."""
    qc = cfg.sub("quantization_config")
    if qc is None and sidecar is not None:
        return _modelopt(Cfg(sidecar, "hf_quant_config.json").sub("quantization") or
                         Cfg({}, "hf_quant_config.json"))
    if qc is None:
        return QuantScheme()
    method = qc.str("quant_method").lower()
    if not method and (qc.has("quant_algo") or _producer(qc) == "modelopt"):
        method = "modelopt"  # a ModelOpt scheme copied into config.json without its quant_method
    if method == "fp8":
        block = _block(qc, "weight_block_size")
        # DeepSeek-V4 `expert_dtype` fp4: routed experts MXFP4 beside block-FP8 (vLLM `deepseek_v4.py:
        # DeepseekV4FP8Config.get_quant_method` -> Mxfp4MoEMethod)
        scheme = QuantScheme(fmt="fp8-block" if block else "fp8", ignore=_names(qc, "modules_to_not_convert",
                             "ignored_layers"), block=block,
                             expert_fmt="mxfp4" if cfg.str("expert_dtype") == "fp4" else None)
        if qc.has("quantized_layers"):  # a ModelOpt per-layer pass over the FP8 checkpoint (its experts)
            return scheme.model_copy(update={"layer_formats": modelopt.layer_formats(qc),
                                             "group_size": modelopt.group_size(qc)})
        return scheme
    if method == "compressed-tensors":
        return _compressed_tensors(qc)
    if method == "modelopt":
        return _modelopt(qc)
    if method == "mxfp4":
        return QuantScheme(fmt="mxfp4", experts_only=True, ignore=_names(qc, "modules_to_not_convert"),
                           group_size=32)
    if method in ("gptq", "awq"):
        bits = qc.int("bits", 4)
        group = qc.int("group_size", 128, minimum=-1)
        if bits != 4:
            raise ConfigError(f"{qc.where}: {method} with {bits} bits is not supported (only 4)")
        return QuantScheme(fmt=f"int4-g{group if group > 0 else 128}", ignore=_names(qc, "modules_to_not_convert"),
                           group_size=group)
    if method in ("bitsandbytes", "gguf"):
        raise ConfigError(f"{qc.where}: quant_method {method!r} is not modelled")
    raise ConfigError(f"{qc.where}: unknown quant_method {method!r}")


def _producer(qc: Cfg) -> str:
    producer = qc.raw("producer")
    return str(producer.get("name", "")) if isinstance(producer, dict) else ""


def _block(qc: Cfg, key: str) -> tuple[int, int] | None:
    """A [rows, cols] block shape of positive integers, or None when absent."""
    block = qc.list(key)
    if not block:
        return None
    if len(block) != 2 or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block):
        raise ConfigError(f"{qc.where}: field {key!r} must be two positive integers, got {block!r}")
    return int(block[0]), int(block[1])


def _names(qc: Cfg, *keys: str) -> tuple[str, ...]:
    out: list[str] = []
    for key in keys:
        for item in qc.list(key) or []:
            if not isinstance(item, str):
                raise ConfigError(f"{qc.where}: field {key!r} must list module names, got {item!r}")
            if item.startswith("re:"):
                try:
                    re.compile(item[3:])
                except re.error as err:
                    raise ConfigError(f"{qc.where}: field {key!r} has an invalid regex {item!r}: {err}") from None
            out.append(item)
    return tuple(out)


def _compressed_tensors(qc: Cfg) -> QuantScheme:
    groups = qc.dict("config_groups") or {}
    if not groups:
        raise ConfigError(f"{qc.where}: compressed-tensors config has no 'config_groups'")
    first = Cfg(next(iter(groups.values())), f"{qc.where}:config_groups")
    weights = first.sub("weights")
    if weights is None:
        raise ConfigError(f"{first.where}: missing required field 'weights'")
    bits = weights.int("num_bits")
    kind = weights.str("type", "int")
    group = weights.opt_int("group_size")
    kv = qc.dict("kv_cache_scheme")
    kv_fp8 = bool(kv and kv.get("num_bits") == 8)
    ignore = _names(qc, "ignore")
    if kind == "float" and bits == 4:  # MX blocks of 32 with an e8m0 scale, NVFP4 groups of 16 with an fp8 one
        fmt = "mxfp4" if group == 32 else "nvfp4"
        return QuantScheme(fmt=fmt, ignore=ignore, group_size=group or 16, kv_fp8=kv_fp8)
    if kind == "float" and bits == 8:
        block = _block(weights, "block_structure")
        return QuantScheme(fmt="fp8-block" if block else "fp8", ignore=ignore, kv_fp8=kv_fp8, block=block)
    if kind == "int" and bits == 4:
        g = group or 128
        return QuantScheme(fmt=f"int4-g{g}", ignore=ignore, group_size=g, kv_fp8=kv_fp8)
    if kind == "int" and bits == 8:
        return QuantScheme(fmt=f"int8-g{group or 128}", ignore=ignore, group_size=group, kv_fp8=kv_fp8)
    raise ConfigError(f"{weights.where}: {bits}-bit {kind} weights are not modelled")


def _modelopt(qc: Cfg) -> QuantScheme:
    algo = qc.str("quant_algo").upper()
    kv_algo = qc.raw("kv_cache_quant_algo")
    kv = qc.raw("kv_cache_scheme")  # an object (num_bits 8) or, copied into config.json, the algorithm's name
    kv_fp8 = any(isinstance(v, str) and v.upper() == "FP8" for v in (kv_algo, kv)) or (
        isinstance(kv, dict) and kv.get("num_bits") == 8)
    ignore = _names(qc, "exclude_modules", "ignore")
    if algo == "MIXED_PRECISION":
        return QuantScheme(fmt="bf16", ignore=ignore, kv_fp8=kv_fp8, group_size=modelopt.group_size(qc),
                           layer_formats=modelopt.layer_formats(qc))
    if algo == "MXFP8":
        return QuantScheme(fmt="mxfp8", ignore=ignore, kv_fp8=kv_fp8, group_size=32)
    if algo == "NVFP4":
        return QuantScheme(fmt="nvfp4", ignore=ignore, group_size=qc.int("group_size", 16), kv_fp8=kv_fp8)
    if algo == "FP8":
        return QuantScheme(fmt="fp8", ignore=ignore, kv_fp8=kv_fp8)
    if algo in ("W4A16_AWQ", "W4A8_AWQ"):
        return QuantScheme(fmt=f"int4-g{qc.int('group_size', 128)}", ignore=ignore, kv_fp8=kv_fp8)
    raise ConfigError(f"{qc.where}: ModelOpt quant_algo {algo!r} is not modelled")
