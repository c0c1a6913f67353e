"""The package's layering (DESIGN section 2: config -> arch -> plan -> cost -> decide -> report), checked on the
import graph of advisor/ read from the source with `ast`: every import counts, at module level, inside functions
and under TYPE_CHECKING. No cycles; `report` never imports `commands`; `decide` never imports `report` or
`commands`; `cost` never imports the resolver, `decide` or `report`; `calibrate` never imports `report`,
`commands` or `decide`."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "advisor"


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the advisor modules it imports (`from A.B import C` is A.B.C when that is a module, else A.B)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        package = m.split(".") if f.name == "__init__.py" else m.split(".")[:-1]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                graph[m] |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module or ""
                for a in node.names:
                    target = f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                    if target in mods and target != m:
                        graph[m].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


FORBIDDEN = [("advisor.report", "advisor.commands"), ("advisor.decide", "advisor.report"),
             ("advisor.decide", "advisor.commands"), ("advisor.cost", "advisor.resolve"),
             ("advisor.cost", "advisor.decide"), ("advisor.cost", "advisor.report"),
             ("advisor.calibrate", "advisor.report"), ("advisor.calibrate", "advisor.commands"),
             ("advisor.calibrate", "advisor.decide")]


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_graph_is_read() -> None:
    graph = import_graph()
    # a known edge of each kind: module level, inside a function, under TYPE_CHECKING
    assert "advisor.decide.ranked" in graph["advisor.decide.choose"]
    assert "advisor.decide.candidates" in graph["advisor.decide.architecture"]
    assert "advisor.decide.ranked" in graph["advisor.decide.explain"]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_layers_import_downwards_only() -> None:
    graph = import_graph()
    bad = [(m, d) for m, deps in graph.items() for d in deps for src, dst in FORBIDDEN
           if _under(m, src) and _under(d, dst)]
    assert bad == []
