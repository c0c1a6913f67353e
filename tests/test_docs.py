"""README.md, docs/*.md and CHANGELOG.md: every generated block lives in the one file `scripts/readme_block.py:
BLOCKS` names and is what its generator writes today; every relative link and figure resolves.

Blocks checked elsewhere against their generator: capacity (tests/test_capacity.py), quality (tests/test_quality.py),
kernel-accuracy (tests/test_kernels.py), memory-logs (tests/test_memory_logs.py), trtllm-public
(tests/test_trtllm_public.py). The rest are checked here."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import case_study, front_page, schema_doc
from scripts.readme_block import BLOCKS, REPO, home, read_block, replace_block

PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
MARKER = re.compile(r"<!-- ([a-z0-9-]+):(start|end) -->")


def written(body: str) -> str:
    """A block as `replace_block` writes it."""
    return body.rstrip("\n") + "\n"


def run_script(name: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", f"scripts.{name}", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout


def test_every_block_lives_in_exactly_one_file_its_registry_names() -> None:
    found: dict[str, list[tuple[str, str]]] = {}
    for page in PAGES:
        for name, side in MARKER.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append((page.relative_to(REPO).as_posix(), side))
    assert set(found) == set(BLOCKS), set(found) ^ set(BLOCKS)
    for name, (path, script) in BLOCKS.items():
        assert found[name] == [(path, "start"), (path, "end")], (name, found[name])
        # its generator writes it there: the script names the block
        assert f'"{name}"' in (REPO / "scripts" / f"{script}.py").read_text(encoding="utf-8"), (name, script)


def test_replace_block_writes_only_between_the_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("head\n<!-- x:start -->\nold\n<!-- x:end -->\ntail\n<!-- y:start -->\nkept\n<!-- y:end -->\n")
    replace_block(page, "x", "new\nlines\n\n")
    assert page.read_text() == ("head\n<!-- x:start -->\nnew\nlines\n<!-- x:end -->\ntail\n<!-- y:start -->\nkept\n"
                                "<!-- y:end -->\n")
    assert read_block("x", page) == "new\nlines\n" and read_block("y", page) == "kept\n"
    with pytest.raises(SystemExit, match="markers"):
        replace_block(page, "z", "body")


# --- the blocks no other test file checks ---------------------------------------------------------------------


def test_rank_output_is_what_the_main_job_prints() -> None:
    # README: `advisor rank MiniMaxAI/MiniMax-M2.5 moonshotai/Kimi-K2.5` at 120 columns, as printed today
    block = read_block("rank-output")
    assert block == written(front_page.rank_output()), "stale: run python -m scripts.front_page --update"
    assert "MiniMaxAI/MiniMax-M2.5" in block and "vllm serve moonshotai/Kimi-K2.5" in block


def test_accuracy_summary_is_the_shipped_held_out_splits() -> None:
    block = read_block("accuracy-summary")
    assert block == written(front_page.accuracy_summary()), "stale: run python -m scripts.front_page --update"
    # the same medians as the full table in docs/accuracy.md (written by scripts/accuracy_table.py)
    full = read_block("serving-accuracy")
    tpot_model = re.search(r"\| `advisor`, a model it never saw \(vLLM / SGLang / TensorRT-LLM\) \| [\d,]+ / [\d,]+ / "
                           r"[\d,]+ held out \| (\d+)% / (\d+)% / (\d+)% \|", block)
    assert tpot_model is not None, block
    for engine, median in zip(("vllm", "sglang", "trtllm"), tpot_model.groups(), strict=True):
        assert re.search(rf"\| \*\*all {engine}\*\* \| {median}% / ", full), engine


def test_measurement_columns_are_the_code_s_columns() -> None:
    from advisor.calibrate.columns import COLUMNS

    block = read_block("measurement-columns")
    assert block == written(schema_doc.measurement_columns()), "stale: run python -m scripts.schema_doc --update"
    rows = [ln for ln in block.splitlines() if ln.startswith("| `")]
    assert [ln.split("`")[1] for ln in rows] == list(COLUMNS)


def test_engine_releases_are_the_code_s_release_tables() -> None:
    from advisor.engines import SGLANG_RELEASES, TRTLLM_RELEASES, VLLM_RELEASES

    block = read_block("engine-releases")
    assert block == written(schema_doc.engine_releases()), "stale: run python -m scripts.schema_doc --update"
    rows = [ln for ln in block.splitlines() if re.match(r"\| (vLLM|SGLang|TensorRT-LLM) \|", ln)]
    assert len(rows) == len(VLLM_RELEASES) + len(SGLANG_RELEASES) + len(TRTLLM_RELEASES)


def test_fitted_terms_are_current() -> None:
    block = read_block("fitted-terms")
    assert block == written(run_script("fitted_terms")), "stale: run python -m scripts.fitted_terms --update"
    # every step term and every kernel model is listed, with its bounds and the rows that inform it
    from advisor.cost.terms import BOUNDS

    for name in BOUNDS:
        row = rf"\| `{name}` \| [^|]+ \| rows with [^|]+: [\d,]+ / [\d,]+ / [\d,]+ \| [^|]+ \| "
        assert re.search(row, block), name
    assert "| `gemm` | 3, by fmt |" in block and "| `marlin_moe` |" in block


def test_serving_accuracy_is_current() -> None:
    assert read_block("serving-accuracy") == run_script("accuracy_table"), \
        "stale: run python -m scripts.accuracy_table --update"


def test_comm_accuracy_is_current(tmp_path: Path) -> None:
    # the generator writes its block (intro and table) into a copy of the page; the page must already say that
    copy = tmp_path / "accuracy.md"
    shutil.copy(home("comm-accuracy"), copy)
    run_script("comm_accuracy", "--update", str(copy))
    assert read_block("comm-accuracy", copy) == read_block("comm-accuracy"), \
        "stale: run python -m scripts.comm_accuracy --update"


def _mask_held_out(text: str) -> str:
    """The case-study table with its last two columns (the held-out prediction and its error) blanked."""
    out = []
    for line in text.splitlines():
        cells = line.split("|")
        if line.startswith("| ") and len(cells) == 15:  # the 13-column measured-vs-predicted table
            cells[12:14] = [" held out ", " held out "]
        out.append("|".join(cells))
    return "\n".join(out)


def test_case_study_is_current_but_its_held_out_columns(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # Every cell but the held-out pair is regenerated here. The held-out columns need the vLLM terms refitted
    # without any RTX PRO 6000 row (`case_study.held_out_terms`, ~40 s), so they are blanked on both sides:
    # a change in the uncalibrated or shipped-terms predictions, the users line or the why table fails this test;
    # a change in the held-out fit alone does not (tests/test_cost_case_study.py runs the whole script).
    from advisor.cost.terms import Terms

    monkeypatch.setattr(case_study, "held_out_terms", Terms)
    assert case_study.main([]) == 0
    generated = capsys.readouterr().out
    block = read_block("case-study")
    assert _mask_held_out(block) == _mask_held_out(generated), "stale: run python -m scripts.case_study --update"
    assert _mask_held_out(block) != block  # the masked columns exist (6 rows)


# --- links ------------------------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"^#{1,6} (.+)$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            out.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_and_figures_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.is_file(), f"{page.name}: {link} -> {target} is missing"
        assert REPO in target.parents, f"{page.name}: {link} leaves the repository"
        if anchor:
            assert anchor in anchors(target), f"{page.name}: #{anchor} is not a heading of {target.name}"
