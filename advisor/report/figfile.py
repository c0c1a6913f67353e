"""Writing a figure: PNG or SVG by the file's extension, atomically (`advisor/files.py`); and what of a figure would
not read (`layout_problems`: artists off the canvas, colliding labels), for the tests of every figure."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.files import atomic_output

__all__ = ["layout_problems", "save"]


def save(fig: Any, path: str | os.PathLike[str]) -> None:
    """Write PNG or SVG (by extension) atomically (advisor.files)."""
    target = Path(path)
    fmt = target.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise AdvisorError(f"--plot: {target}: give a .png or .svg file name")
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise AdvisorError(f"--plot: {target}: directory {directory} does not exist")
    with atomic_output(target, "wb") as fh:
        fig.savefig(fh, format=fmt)


def layout_problems(fig: Any, tolerance_px: float = 1.0) -> list[str]:
    """What of the figure would not read, drawn on matplotlib's Agg renderer: every text (titles, labels, tick
    labels, annotations), legend and axes whose extent leaves the figure's canvas; two tick labels of one axis that
    overlap; two texts of one axes (direct labels) that overlap each other or the axes' legend; a text that two
    unescaped `$` turn into mathtext (a price). Empty: none."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cbook import is_math_text
    from matplotlib.text import Text

    from advisor.report.labels import text_box

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    page = fig.bbox.padded(tolerance_px)
    out: list[str] = []

    def check(what: str, box: Any) -> None:
        if box.width > 0 and not (page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0
                                  and box.y1 <= page.y1):
            out.append(f"{what} leaves the canvas: {_extent(box)} outside {_extent(fig.bbox)}")

    for t in fig.texts:
        if t.get_visible() and t.get_text():
            check(f"figure text {t.get_text()!r}", t.get_window_extent(renderer))
    words = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    out += [f"text {t.get_text()!r} reads as mathtext (two unescaped $)" for t in words
            if is_math_text(t.get_text()) and "\\mathdefault" not in t.get_text()]
    for leg in fig.legends:
        check("figure legend", leg.get_window_extent(renderer))
    for n, ax in enumerate(fig.axes):
        name = f"axes {n} ({ax.get_title() or ax.get_label()!s})"
        check(name, ax.get_tightbbox(renderer))
        for t in (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts):
            if t.get_visible() and t.get_text():
                check(f"{name}: text {t.get_text()!r}", t.get_window_extent(renderer))
        leg = ax.get_legend()
        if leg is not None:
            check(f"{name}: legend", leg.get_window_extent(renderer))
        for axis in (ax.xaxis, ax.yaxis):
            labels = _tick_labels(axis)
            for t in labels:
                check(f"{name}: tick label {t.get_text()!r}", t.get_window_extent(renderer))
            out += [f"{name}: tick labels {a!r} and {b!r} overlap"
                    for a, b in _overlapping([(t.get_text(), t.get_window_extent(renderer)) for t in labels])]
        texts = [(t.get_text(), text_box(t, renderer)) for t in ax.texts if t.get_visible() and t.get_text()]
        if leg is not None:
            texts.append(("legend", leg.get_window_extent(renderer)))
        out += [f"{name}: {a!r} and {b!r} overlap" for a, b in _overlapping(texts)]
    return out


def _tick_labels(axis: Any) -> list[Any]:
    """The tick labels the axis draws: visible, non-empty, at a tick inside the view interval."""
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for locs, ticks in ((axis.get_majorticklocs(), axis.get_major_ticks), (axis.get_minorticklocs(),
                                                                           axis.get_minor_ticks)):
        for loc, tick in zip(locs, ticks(len(locs)), strict=True):
            inside = lo - 1e-9 * abs(lo) <= loc <= hi + 1e-9 * abs(hi)
            for t in (tick.label1, tick.label2):
                if inside and t.get_visible() and t.get_text():
                    out.append(t)
    return out


def _overlapping(boxes: list[tuple[str, Any]], shrink_px: float = 0.5) -> list[tuple[str, str]]:
    """Pairs whose boxes overlap by more than `shrink_px` on both axes."""
    pairs = []
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1:]:
            if (min(ba.x1, bb.x1) - max(ba.x0, bb.x0) > shrink_px
                    and min(ba.y1, bb.y1) - max(ba.y0, bb.y0) > shrink_px):
                pairs.append((a, b))
    return pairs


def _extent(box: Any) -> str:
    return f"x {box.x0:.0f}..{box.x1:.0f}, y {box.y0:.0f}..{box.y1:.0f} px"
