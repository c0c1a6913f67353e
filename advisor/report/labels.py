"""Direct labels for the figures: each label placed next to its point, inside the axes, clear of the labels placed
before it and of the other labelled points; a thin leader line when it had to move away. Greedy, in the order
given (the first label gets the best spot). Call it after the figure's layout is fixed (`freeze_layout`): it
measures the labels on the canvas.

matplotlib objects are passed in; this module imports matplotlib only for its types' sake (inside functions)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Offsets tried around a point (points; x right, y up), nearest ring first: right, above, left, below, diagonals.
DIRECTIONS = ((1, 0.3), (1, -0.9), (-1, 0.3), (-1, -0.9), (0, 1), (0, -1.6), (1, 1), (-1, 1), (1, -1.6), (-1, -1.6))
RINGS = (7.0, 16.0, 28.0, 42.0, 60.0, 85.0, 115.0, 150.0)
POINT_PX = 5.0  # half the side of the box kept clear around every labelled point (pixels)


@dataclass(frozen=True)
class Label:
    x: float  # data coordinates of the point
    y: float
    text: str
    color: str


def freeze_layout(fig: Any) -> Any:
    """Run the figure's layout once, keep it (no layout engine from here on), and return the canvas' renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    return canvas.get_renderer()


def place(ax: Any, labels: Sequence[Label], renderer: Any, fontsize: str = "small",
          avoid: Sequence[tuple[float, float]] = ()) -> list[Any]:
    """Annotate every label in the axes, clear of the other labels, their points and the axes' legend and, where it
    can, of the `avoid` points (data coordinates: the curves' markers); return the annotations."""
    inside = ax.get_window_extent(renderer)
    points = [_point_box(ax, lb.x, lb.y) for lb in labels]
    marks = [_point_box(ax, x, y) for x, y in avoid]
    legend = ax.get_legend()
    taken: list[Any] = [legend.get_window_extent(renderer)] if legend is not None else []  # kept clear like a label
    out = []
    for j, lb in enumerate(labels):
        others = [b for k, b in enumerate(points) if k != j]
        best: tuple[float, Any, Any] | None = None
        for r in RINGS:
            for dx, dy in DIRECTIONS:
                ann = _annotate(ax, lb, (dx * r, dy * r), fontsize, leader=r > RINGS[0])
                box = text_box(ann, renderer)
                # another label or point hidden costs most, then leaving the axes, then covering a curve's markers
                cost = 100 * _overlap(box, taken + others) + 1e3 * _outside(box, inside) + 0.2 * _overlap(box, marks)
                if best is None or cost < best[0]:
                    if best is not None:
                        best[1].remove()
                    best = (cost, ann, box)
                else:
                    ann.remove()
                if cost == 0:
                    break
            if best is not None and best[0] == 0:
                break
        assert best is not None
        taken.append(best[2])
        out.append(best[1])
    return out


def _annotate(ax: Any, lb: Label, offset: tuple[float, float], fontsize: str, leader: bool) -> Any:
    ha = "left" if offset[0] > 0 else "right" if offset[0] < 0 else "center"
    va = "bottom" if offset[1] > 0.5 else "top" if offset[1] < -0.5 else "center"
    arrow = {"arrowstyle": "-", "color": lb.color, "linewidth": 0.6, "shrinkA": 0, "shrinkB": 3} if leader else None
    return ax.annotate(lb.text, (lb.x, lb.y), xytext=offset, textcoords="offset points", ha=ha, va=va,
                       fontsize=fontsize, color=lb.color, arrowprops=arrow, annotation_clip=False, zorder=6,
                       bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})


def text_box(text: Any, renderer: Any) -> Any:
    """The window extent of a text or annotation's text alone (an annotation's own extent includes its leader)."""
    from matplotlib.text import Annotation, Text

    if isinstance(text, Annotation):
        text.update_positions(renderer)  # where its offset puts the text (else done only when drawn)
    return Text.get_window_extent(text, renderer)


def _point_box(ax: Any, x: float, y: float) -> Any:
    from matplotlib.transforms import Bbox

    px, py = ax.transData.transform((x, y))
    return Bbox.from_extents(px - POINT_PX, py - POINT_PX, px + POINT_PX, py + POINT_PX)


def _overlap(box: Any, others: Sequence[Any]) -> float:
    """Pixels² of `box` that other boxes cover (summed)."""
    total = 0.0
    for o in others:
        w = min(box.x1, o.x1) - max(box.x0, o.x0)
        h = min(box.y1, o.y1) - max(box.y0, o.y0)
        if w > 0 and h > 0:
            total += w * h
    return total


def _outside(box: Any, inside: Any) -> float:
    """How far (pixels) `box` reaches beyond `inside`, summed over the four sides."""
    return (max(inside.x0 - box.x0, 0) + max(box.x1 - inside.x1, 0) + max(inside.y0 - box.y0, 0)
            + max(box.y1 - inside.y1, 0))


def plain_log_axis(axis: Any) -> None:
    """A log axis labelled in plain numbers at 1, 2 and 5 of each decade (20, 50, 100, 200, ...), no minor labels:
    the default's `3x10^1` minor labels collide on a short axis."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())
