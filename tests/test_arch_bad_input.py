"""Bad config input: one AdvisorError naming the file and the field, never another exception.
Includes a hypothesis test that mutates the real configs in tests/data/configs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from advisor.arch.fields import ConfigError
from advisor.arch.local import read_json_file, read_local
from advisor.arch.model import ModelArch
from advisor.arch.reader import read_config
from advisor.errors import AdvisorError
from advisor.resolve import resolve

CONFIGS = Path(__file__).resolve().parent / "data" / "configs"
LLAMA = "meta-llama--Llama-3.1-8B.json"


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _llama(configs_dir: Path, **changes: Any) -> dict[str, Any]:
    data = read_json_file(configs_dir / LLAMA)
    for key, value in changes.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return data


# ---- files ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("content", "says"), [
    ('{"hidden_size": 4096, "num_hidden_', "invalid JSON at line 1"),
    ("hidden_size = 4096\n", "invalid JSON"),
    ("", "empty"),
    ("[1, 2, 3]", "expected a JSON object, got a JSON array"),
    ('"config"', "expected a JSON object, got a JSON string"),
    ("null", "expected a JSON object, got a JSON null"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "binary file"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_bad_files(tmp_path: Path, content: str | bytes, says: str) -> None:
    path = _write(tmp_path, "config.json", content)
    with pytest.raises(ConfigError) as err:
        read_json_file(path)
    assert str(path) in str(err.value) and says in str(err.value)
    assert "\n" not in str(err.value)


def test_folder_without_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="folder has no config.json"):
        read_local(tmp_path)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        read_json_file(tmp_path / "nope.json")


@pytest.mark.parametrize("ref", ["../x/y", "a/b/../c", "./no/such/config.json", "/no/such/dir"])
def test_path_like_ids_are_rejected(ref: str) -> None:
    with pytest.raises(AdvisorError, match="no such file or directory"):
        resolve(ref)


# ---- fields --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value", "says"), [
    ("num_hidden_layers", ..., "missing required field 'num_hidden_layers'"),
    ("hidden_size", ..., "missing required field 'hidden_size'"),
    ("vocab_size", ..., "missing required field 'vocab_size'"),
    ("hidden_size", -4096, "'hidden_size' = -4096 is outside"),
    ("num_hidden_layers", "32", "'num_hidden_layers' must be an integer, got '32'"),
    ("num_hidden_layers", 32.5, "'num_hidden_layers' must be an integer"),
    ("num_hidden_layers", [32], "'num_hidden_layers' must be an integer"),
    ("num_hidden_layers", True, "'num_hidden_layers' must be an integer"),
    ("num_attention_heads", 0, "'num_attention_heads' = 0 is outside"),
    ("num_key_value_heads", 0, "'num_key_value_heads' = 0 is outside"),
    ("hidden_size", 10**12, "'hidden_size' = 1000000000000 is outside"),
    ("num_hidden_layers", 10**9, "'num_hidden_layers' = 1000000000 is outside"),
    ("vocab_size", float("inf"), "'vocab_size' must be an integer"),
    ("num_key_value_heads", 64, "'num_key_value_heads'"),
    ("num_key_value_heads", 3, "'num_key_value_heads'"),
    ("tie_word_embeddings", "yes", "'tie_word_embeddings' must be true/false"),
    ("layer_types", ["full_attention"], "'layer_types' has 1 entries for 32 layers"),
    ("quantization_config", {"quant_method": "magic"}, "unknown quant_method 'magic'"),
    ("quantization_config", "fp8", "'quantization_config' must be an object"),
])
def test_bad_fields_name_file_and_field(configs_dir: Path, field: str, value: Any, says: str) -> None:
    data = _llama(configs_dir, **{field: value})
    with pytest.raises(ConfigError) as err:
        read_config(data, name="llama", where="/models/llama/config.json")
    message = str(err.value)
    assert message.startswith("/models/llama/config.json")
    assert says in message


def test_text_config_field_is_named_with_its_path(configs_dir: Path) -> None:
    data = read_json_file(configs_dir / "moonshotai--Kimi-K2.5.json")
    data["text_config"]["kv_lora_rank"] = -1
    with pytest.raises(ConfigError, match=r"^kimi/config.json:text_config: field 'kv_lora_rank'"):
        read_config(data, name="kimi", where="kimi/config.json")


def test_moe_without_top_k(configs_dir: Path) -> None:
    data = read_json_file(configs_dir / "mistralai--Mixtral-8x7B-v0.1.json")
    del data["num_experts_per_tok"]
    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        read_config(data, name="mixtral")


def test_remote_code_fields_are_ignored(configs_dir: Path, tmp_path: Path) -> None:
    """auto_map / trust_remote_code change nothing in the architecture and nothing is imported or executed; that
    the config declares auto_map is recorded (the serve command then passes --trust-remote-code)."""
    marker = tmp_path / "executed"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    data = _llama(configs_dir, auto_map={"AutoConfig": "evil.Config", "AutoModelForCausalLM": "evil.Model"},
                  trust_remote_code=True)
    plain = read_config(_llama(configs_dir), name="llama")
    declared = read_config(data, name="llama")
    assert declared.remote_code is True and plain.remote_code is False
    assert declared.model_copy(update={"remote_code": False}) == plain
    assert not marker.exists()


# ---- 7. property: mutated real configs never crash -----------------------------------------------

FILES = sorted(p.name for p in CONFIGS.glob("*.json"))
_BASE: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}


def _base(file: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if file not in _BASE:
        side = CONFIGS / "_sidecars" / file.replace(".json", ".hf_quant_config.json")
        _BASE[file] = (json.loads((CONFIGS / file).read_text()),
                       json.loads(side.read_text()) if side.exists() else None)
    return _BASE[file]


MUTATIONS = st.sampled_from(["drop", "str", "list", "none", "float", "negative", "huge", "zero", "dict",
                             "bool", "empty_list"])


def _mutate(value: Any, how: str, draw_float: float) -> Any:
    return {
        "str": str(value), "list": [value], "none": None, "float": draw_float,
        "negative": -abs(value) - 1 if isinstance(value, int | float) and not isinstance(value, bool) else -1,
        "huge": 10**18, "zero": 0, "dict": {"value": value}, "bool": True, "empty_list": [],
    }[how]


def _check_valid(arch: ModelArch) -> None:
    """A returned architecture is usable: every count the cost model reads computes to a finite number."""
    assert arch.total_params > 0 and 0 < arch.active_params <= arch.total_params
    assert arch.weight_bytes > 0 and arch.checkpoint_bytes >= arch.weight_bytes
    for tp in (1, 8):
        assert arch.kv_bytes_per_token(tp) >= 0
        assert arch.window_kv_bytes_per_seq(tp) >= 0 and arch.state_bytes_per_seq(tp) >= 0
    assert arch.weight_dtype and isinstance(arch.layer_kinds, dict)


def _pick(data: st.DataObject, config: dict[str, Any]) -> tuple[dict[str, Any] | list[Any], Any] | None:
    """A (container, key) to mutate: a top-level or text_config field, one level into an object field
    (quantization_config, vision_config, rope_scaling ...) or one element of a list field (layer_types ...)."""
    scope: dict[str, Any] | list[Any] = config
    if isinstance(config.get("text_config"), dict) and data.draw(st.booleans(), label="in text_config"):
        scope = config["text_config"]
    for _depth in range(3):
        if not scope:
            return None
        key: Any = data.draw(st.sampled_from(sorted(scope) if isinstance(scope, dict) else range(len(scope))),
                             label="key")
        inner = scope[key]
        if not isinstance(inner, dict | list) or not inner or not data.draw(st.booleans(), label="deeper"):
            return scope, key
        scope = inner
    return None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_configs_read_or_raise_advisor_error(data: st.DataObject) -> None:
    file = data.draw(st.sampled_from(FILES), label="file")
    config, sidecar = _base(file)
    config = copy.deepcopy(config)
    for _ in range(data.draw(st.integers(1, 3), label="n")):
        picked = _pick(data, config)
        if picked is None:
            break
        scope, key = picked
        how = data.draw(MUTATIONS, label="mutation")
        if how == "drop":
            del scope[key]
        else:
            scope[key] = _mutate(scope[key], how, data.draw(st.floats(allow_nan=True), label="float"))
    try:
        arch = read_config(config, name=file, where=file, sidecar=sidecar)
    except AdvisorError as err:
        message = str(err)
        assert message.startswith(file) and "\n" not in message
        event("AdvisorError")
        return
    event("read")
    _check_valid(arch)


def test_a_block_list_of_lists_is_a_config_error() -> None:
    """A Nemotron-H block list whose entries are lists (found by the mutation test above): one AdvisorError naming the
    field, not a TypeError from hashing a list."""
    file = "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json"
    config, sidecar = _base(file)
    config = copy.deepcopy(config)
    config["mtp_layers_block_type"] = [config["mtp_layers_block_type"]]
    with pytest.raises(AdvisorError, match="field 'mtp_layers_block_type' has unknown block"):
        read_config(config, name=file, where=file, sidecar=sidecar)
