"""The rich console every human rendering prints through: what it is handed shows as it is.

Model ids, paths, CSV cells and config fields reach the tables inside f-strings, where rich cannot tell them from the
template. So no rich markup (`[bold]` in a cell prints as `[bold]`; styles are given as `Text` spans), no `:emoji:`
codes, and every control character a terminal would act on (ESC sequences that clear the screen or retitle the
window, BEL, bidirectional overrides) written as its escape (`advisor.text.printable`) before rich lays the text out,
so that columns still line up."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Span, Text

from advisor.text import printable


class SafeConsole(Console):
    """`rich.console.Console` without markup or emoji codes, escaping control characters in strings and `Text`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        kwargs.setdefault("emoji", False)
        super().__init__(**kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:  # every str printed, table cell and title
        return super().render_str(printable(text), **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(safe_text(o) if isinstance(o, Text) else o for o in objects), **kwargs)


def safe_text(t: Text) -> Text:
    """`t` with its control characters escaped, its styled spans moved to where their characters now are."""
    plain = t.plain
    if printable(plain) == plain:
        return t
    ends = [0]
    for ch in plain:
        ends.append(ends[-1] + len(printable(ch)))
    out = Text(printable(plain), style=t.style, justify=t.justify, overflow=t.overflow, no_wrap=t.no_wrap,
               end=t.end)
    out.spans = [Span(ends[s.start], ends[s.end], s.style) for s in t.spans]
    return out
