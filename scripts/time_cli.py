"""Wall time of the CLI (median of N runs) and what `import advisor.cli` pulls in at start-up.

Usage: python -m scripts.time_cli [--runs 5]
Exit 1 when scipy, matplotlib or huggingface_hub is imported at CLI start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HEAVY = ("scipy", "matplotlib", "huggingface_hub")
COMMANDS = {
    "advisor --help": ["--help"],
    "advisor rank MiniMaxAI/MiniMax-M2.5 moonshotai/Kimi-K2.5": ["rank", "MiniMaxAI/MiniMax-M2.5",
                                                                 "moonshotai/Kimi-K2.5"],
}


def wall_times(args: list[str], runs: int, env: dict[str, str]) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "advisor.cli", *args], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
    return out


def import_times() -> list[tuple[int, str]]:
    """(cumulative us, module) from `python -X importtime -c "import advisor.cli"` (stderr)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", "import advisor.cli"], capture_output=True,
                       text=True, check=True)
    rows = []
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        cumulative, name = _parse(line)
        rows.append((int(cumulative), name))
    return rows


def _parse(line: str) -> tuple[str, str]:
    """`import time:   self |  cumulative | name` -> (cumulative, name)."""
    _, cumulative, name = line.removeprefix("import time:").split("|")
    return cumulative.strip(), name.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": home}
        for label, args in COMMANDS.items():
            t = wall_times(args, ns.runs, env)
            print(f"{label}: median {statistics.median(t) * 1e3:.0f} ms over {ns.runs} runs "
                  f"(min {min(t) * 1e3:.0f}, max {max(t) * 1e3:.0f})")
    rows = import_times()
    print("\nimport advisor.cli: top 10 cumulative imports (ms)")
    for us, name in sorted(rows, reverse=True)[:10]:
        print(f"  {us / 1e3:8.1f}  {name}")
    top_level = {name.split(".")[0] for _, name in rows}
    heavy = [m for m in HEAVY if m in top_level]
    print(f"\nheavy modules imported at CLI start: {', '.join(heavy) or 'none'}")
    return 1 if heavy else 0


if __name__ == "__main__":
    sys.exit(main())
