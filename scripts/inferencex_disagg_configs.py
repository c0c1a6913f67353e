"""The disaggregated configurations InferenceX ran, with the dates each was in force, as one CSV table.

    python -m scripts.inferencex_disagg_configs <InferenceX git dir> -o tests/data/bench/inferencex_disagg_configs.csv

Reads the history of a clone of SemiAnalysisAI/InferenceX (Apache-2.0; a bare clone is enough, only `git log` and
`git show` are run): every revision of `.github/configs/nvidia-master.yaml` from 2025-12-05 (#251, the first with
multinode entries) to 2026-04-15 (the last measured row is of 2026-04-02), one row per distinct `disagg: true`
search-space entry; and, before that, the GB200 sweeps `runners/launch_gb200-nv.sh` launched itself (its
`submit_disagg.sh` calls, 2025-11-05 to 2025-12-05). `scripts.recover_disagg` matches measured rows against this
table (tests/data/bench/README.md, "Disaggregated runs").

Per side the table gives what ran, decoded from the entry (`decode_side` below):
`*_workers`, `*_gpus` (GPUs per worker), `*_dp_attn`, `*_ep`, and InferenceX's own metadata `*_tp_meta`,
`*_ep_meta` (what its result files recorded; aiconfigurator's rows store those, see the README).
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MASTER = ".github/configs/nvidia-master.yaml"
LAUNCHER = "runners/launch_gb200-nv.sh"
GPUS_PER_NODE = {"gb200": 4, "gb300": 4, "b200": 8, "b300": 8, "h100": 8, "h200": 8}
# The images the GB200 launcher's sweeps ran before the master config listed them: the matrix of
# .github/workflows/full-sweep-{1k1k,8k1k}-scheduler.yml at 450d834a9 (2025-11-05). The SGLang job's image was then
# replaced by a local squash file (`IMAGE=/mnt/lustre01/artifacts/containers/dynamo-sglang.sqsh`, the launcher).
LAUNCHER_IMAGES = {"dynamo-trt": "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.5.1-rc0.pre3",
                   "dynamo-sglang": "nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.5.1-rc0.pre1"}
FIELDS = ("config", "file", "first_commit", "first_date", "until_date", "image", "model_prefix", "precision",
          "runner", "framework", "isl", "osl", "spec", "spec_tokens", "conc_list", "conc_per_decode_worker",
          "prefill_workers", "prefill_gpus", "prefill_dp_attn", "prefill_ep", "prefill_tp_meta", "prefill_ep_meta",
          "decode_workers", "decode_gpus", "decode_dp_attn", "decode_ep", "decode_tp_meta", "decode_ep_meta",
          "recipe", "ran_image")


def git(repo: Path, *args: str) -> str:
    """stdout of one git command in `repo` (a clone or a bare git directory)."""
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return out.stdout


def commits(repo: Path, path: str, since: str, until: str) -> list[tuple[str, str]]:
    """(commit, ISO date) of every commit touching `path` in [since, until), oldest first."""
    lines = git(repo, "log", "--reverse", "--format=%H %cI", f"--since={since}", f"--until={until}", "--", path)
    return [(h, d) for h, d in (line.split(" ", 1) for line in lines.splitlines())]


def _settings(side: dict[str, Any]) -> dict[str, str]:
    return dict(s.split("=", 1) for s in side.get("additional-settings") or [] if "=" in s)


def decode_side(side: dict[str, Any], runner: str, framework: str) -> dict[str, Any]:
    """What one side of a master-config entry ran: workers, GPUs per worker, attention DP, EP.

    TensorRT-LLM entries and the SGLang entries with a recipe (CONFIG_FILE): GPUs = `tp`, EP = `ep`, attention DP =
    `dp-attn` (benchmarks/*_dynamo-trt_slurm.sh pass them on). The GB200 SGLang entries that give PREFILL_NODES /
    DECODE_NODES instead: `tp: 1` and (before 2026-01-19, #486 "update ep metadata ... to match comments") `ep: 1`
    are placeholders ("tp, ep, and dp-attn do nothing because they are hardcoded", the config's comment); each
    worker holds NODES x 4 / num-worker GPUs and runs `--tp-size N --dp-size N --enable-dp-attention` with DeepEP
    over all N (Dynamo components/backends/sglang/slurm_jobs/scripts/gb200-fp8.sh), EP = N, which #486 recorded."""
    cfg = _settings(side)
    workers = int(side["num-worker"])
    nodes = cfg.get("PREFILL_NODES") or cfg.get("DECODE_NODES")
    if framework == "dynamo-sglang" and nodes:
        gpus = int(nodes) * GPUS_PER_NODE[runner] // workers
        ep = gpus
    else:
        gpus, ep = int(side["tp"]), int(side["ep"])
    return {"workers": workers, "gpus": gpus, "dp_attn": int(bool(side.get("dp-attn"))), "ep": ep,
            "tp_meta": int(side["tp"]), "ep_meta": int(side["ep"])}


def _spec_tokens(entry: dict[str, Any]) -> str:
    """MTP layers drafted per step: DECODE_MTP_SIZE, else the recipe's `_mtp<N>` (aiconfigurator/srt-slurm naming)."""
    if entry.get("spec-decoding", "none") == "none":
        return "0"
    cfg = {**_settings(entry["prefill"]), **_settings(entry["decode"])}
    if "DECODE_MTP_SIZE" in cfg:
        return cfg["DECODE_MTP_SIZE"]
    m = re.search(r"_mtp(\d)", cfg.get("CONFIG_FILE", ""))
    return m.group(1) if m else ""


def master_rows(key: str, cfg: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One row per search-space entry of one `disagg: true` config (dates are filled in by the caller)."""
    for seq in cfg.get("seq-len-configs", []):
        for entry in seq.get("search-space", []):
            runner = cfg["runner"].split("-")[0]  # b200-multinode-slurm: the b200 runners
            pre = decode_side(entry["prefill"], runner, cfg["framework"])
            dec = decode_side(entry["decode"], runner, cfg["framework"])
            settings = {**_settings(entry["prefill"]), **_settings(entry["decode"])}
            per_worker = cfg["framework"] == "dynamo-trt" and "CONFIG_FILE" not in settings
            row = {"config": key, "file": MASTER, "image": cfg["image"], "model_prefix": cfg["model-prefix"],
                   "precision": cfg["precision"], "runner": runner, "framework": cfg["framework"],
                   "isl": seq["isl"], "osl": seq["osl"], "spec": entry.get("spec-decoding", "none"),
                   "spec_tokens": _spec_tokens(entry),
                   "conc_list": " ".join(str(c) for c in entry.get("conc-list") or []),
                   # Dynamo's performance_sweeps/scripts/bench.sh runs each listed concurrency x num_gen_servers
                   "conc_per_decode_worker": int(per_worker), "recipe": settings.get("CONFIG_FILE", "")}
            row.update({f"prefill_{k}": v for k, v in pre.items()})
            row.update({f"decode_{k}": v for k, v in dec.items()})
            yield row


_ISL = re.compile(r'\[ "\$(?:isl|ISL)" = "(\d+)" \] && \[ "\$(?:osl|OSL)" = "(\d+)" \]')
_TRT = re.compile(r'^\s*\./submit_disagg\.sh "mtp=(on|off)" "(tep|dep)" (\d+) (\d+) (\d+) (\d+) (\d+) "[\d.]+" '
                  r'(\d+) (\d+) "([\d ]+)"')
_SGL = re.compile(r"^\s*bash \./submit_disagg\.sh (\d+) (\d+) (\d+) (\d+) \d+ \$ISL \$OSL \$?(\S+) inf")
_CONC_VAR = re.compile(r'(\w*concurrency_list)="([\dx]+)"')


def _side(workers: int, gpus: int, dp_attn: bool) -> dict[str, Any]:
    return {"workers": workers, "gpus": gpus, "dp_attn": int(dp_attn), "ep": gpus, "tp_meta": "", "ep_meta": ""}


def launcher_rows(text: str) -> Iterator[dict[str, Any]]:
    """The GB200 sweeps one revision of runners/launch_gb200-nv.sh submitted (DeepSeek-R1, before 2025-12-05).

    TensorRT-LLM (`./submit_disagg.sh <mtp> <tep|dep> ctx_num gen_num gen_tp batch max_tokens mem mtp eplb conc` of
    Dynamo components/backends/trtllm/performance_sweeps, release/0.5.1-rc0.20251105): ctx_num context workers of 4
    GPUs (one tray; the submit script passes `ctx_tp_size 4 ... ctx_enable_attention_dp true` to
    benchmark_disagg.slurm and gen_yaml.py sets moe_expert_parallel_size = tp), gen_num generation workers of gen_tp
    GPUs, attention DP for `dep`, EP = gen_tp; the listed concurrencies are per generation worker (bench.sh runs
    concurrency x num_gen_servers). SGLang (`submit_disagg.sh P_NODES P_WORKERS D_NODES D_WORKERS ...`): every
    worker DP-attention over its NODES x 4 / WORKERS GPUs with DeepEP over all of them (gb200-fp8.sh)."""
    isl = osl = 0
    conc_vars: dict[str, str] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        if m := _ISL.search(line):
            isl, osl = int(m.group(1)), int(m.group(2))
        for var, value in _CONC_VAR.findall(line):
            conc_vars[var] = value
        base = {"file": LAUNCHER, "model_prefix": "dsr1", "runner": "gb200", "isl": isl, "osl": osl, "recipe": ""}
        if m := _TRT.match(line):
            mtp, mode, ctx, gen, tp, _batch, _tokens, mtp_size, _eplb, conc = m.groups()
            sides = {"prefill": _side(int(ctx), 4, True), "decode": _side(int(gen), int(tp), mode == "dep")}
            row = {**base, "config": "dsr1-fp4-gb200-dynamo-trt", "image": LAUNCHER_IMAGES["dynamo-trt"],
                   "precision": "fp4", "framework": "dynamo-trt", "spec": "mtp" if mtp == "on" else "none",
                   "spec_tokens": mtp_size, "conc_list": " ".join(conc.split()), "conc_per_decode_worker": 1}
        elif m := _SGL.match(line):
            pn, pw, dn, dw, var = m.groups()
            conc = conc_vars.get(var, var).replace("x", " ")
            sides = {"prefill": _side(int(pw), int(pn) * 4 // int(pw), True),
                     "decode": _side(int(dw), int(dn) * 4 // int(dw), True)}
            row = {**base, "config": "dsr1-fp8-gb200-dynamo-sglang", "image": LAUNCHER_IMAGES["dynamo-sglang"],
                   "precision": "fp8", "framework": "dynamo-sglang", "spec": "none", "spec_tokens": "0",
                   "conc_list": conc, "conc_per_decode_worker": 0}
        else:
            continue
        for name, side in sides.items():
            row.update({f"{name}_{k}": v for k, v in side.items()})
        row["ran_image"] = ran_image(text, str(row["framework"]), isl, osl)
        yield row


_SQUASH_BY_ISL = re.compile(r'if \[ "\$ISL" = "1024" \] && \[ "\$OSL" = "1024" \]; then\s*export IMAGE="([^"]+)"'
                            r'\s*else\s*export IMAGE="([^"]+)"')
_SQUASH = re.compile(r'FRAMEWORK == "dynamo-sglang" \]\]; then\s*export IMAGE="([^"]+)"')


def ran_image(launcher: str, framework: str, isl: int, osl: int) -> str:
    """The local squash file the GB200 launcher ran instead of the configured SGLang image, if it replaced it
    (`export IMAGE=/mnt/lustre01/artifacts/containers/<file>.sqsh`: 2025-11 to 2025-12-19; at 1k/1k a squash of
    lmsysorg/sglang:v0.5.5.post2 from 2025-12-01), else ''."""
    if framework != "dynamo-sglang":
        return ""
    if m := _SQUASH_BY_ISL.search(launcher):
        return Path(m.group(1) if (isl, osl) == (1024, 1024) else m.group(2)).name
    if m := _SQUASH.search(launcher):
        return Path(m.group(1)).name
    return ""


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(str(row[f]) for f in FIELDS if f not in ("first_commit", "first_date", "until_date"))


def with_dates(revisions: list[tuple[str, str, list[dict[str, Any]]]], end: str) -> list[dict[str, Any]]:
    """Rows with the interval each was in force: from the first revision holding it to the first one that drops it
    (`end`'s date, exclusive, where the last revision still holds it)."""
    out: list[dict[str, Any]] = []
    open_rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for commit, date, rows in revisions:
        keys = {_key(r): r for r in rows}
        for k in [k for k in open_rows if k not in keys]:
            out.append({**open_rows.pop(k), "until_date": date})
        for k, r in keys.items():
            if k not in open_rows:
                open_rows[k] = {**r, "first_commit": commit[:9], "first_date": date}
    out.extend({**r, "until_date": end} for r in open_rows.values())
    return out


def collect(repo: Path) -> list[dict[str, Any]]:
    """Every row: the launcher's sweeps (2025-11-01 to #251), then the master config's (to 2026-04-15)."""
    import yaml  # PyYAML, a dependency of huggingface_hub; only this research script reads YAML

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser where installed: 154 revisions
    first_master = commits(repo, MASTER, "2025-12-05", "2025-12-06")[0]
    early = [(h, d, list(launcher_rows(git(repo, "show", f"{h}:{LAUNCHER}"))))
             for h, d in commits(repo, LAUNCHER, "2025-11-01", first_master[1])]
    master = []
    for h, d in commits(repo, MASTER, "2025-12-05", "2026-04-15"):
        cfg = yaml.load(git(repo, "show", f"{h}:{MASTER}"), Loader=loader)
        rows = [r for key, c in cfg.items() if isinstance(c, dict) and c.get("disagg") for r in master_rows(key, c)]
        launcher = git(repo, "show", f"{h}:{LAUNCHER}")
        for r in rows:
            r["ran_image"] = ran_image(launcher, r["framework"], r["isl"], r["osl"]) if r["runner"] == "gb200" else ""
        master.append((h, d, rows))
    return with_dates(early, first_master[1]) + with_dates(master, "")


def main(argv: list[str] | None = None) -> int:
    """Write the table; exit 2 with one line when the clone cannot be read."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a clone (or bare git dir) of SemiAnalysisAI/InferenceX")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        rows = collect(args.repo)
    except (subprocess.CalledProcessError, FileNotFoundError, IndexError) as err:
        print(f"error: {args.repo}: cannot read the InferenceX history ({err})", file=sys.stderr)
        return 2
    rows.sort(key=lambda r: (r["first_date"], r["config"], r["isl"], r["osl"], r["spec"], r["conc_list"]))
    with open(args.output, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} entries -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
