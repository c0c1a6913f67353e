"""The two sides of a disaggregated search: each side's runnable plans and their evaluation (`decide/disagg.py`
builds it, `decide/disagg_verdict.py` reads it)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.cost.disagg_serving import DecodeSide, PrefillSide
from advisor.cost.sweep import Case
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings


@dataclass(frozen=True)
class Sides:
    """The two sides' runnable plans, their evaluation, and the flags and terms they were made with."""

    settings: Settings
    decode_settings: Settings
    terms: Terms
    pre_cases: list[Case]
    dec_cases: list[Case]
    pre: PrefillSide | None
    dec: DecodeSide | None
