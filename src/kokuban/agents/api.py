"""An agent run's calls billed on an API price sheet.

Per call, with the sheet's prices (USD per million tokens):

    read      = previous prompt's tokens still cached      (0 for the first call, without caching, or expired)
    written   = prompt − read                              (billed at the cache-write price; at the input price
                                                            where the sheet has no separate write price, and
                                                            without caching)
    expired   ⇔ gap before the call > TTL                  (the gap rewrites the whole context)
    long tier ⇔ prompt > the sheet's threshold             (the whole request at the long rates; cache prices
                                                            scaled by long input ÷ input)
    USD       = lane × off-peak × (written·write + read·cached + output·output) ÷ 10⁶

With caching and every gap under the TTL a step writes only its new tokens (o_{i−1} + r_{i−1}) and reads the
rest. Retention "extended" buys the sheet's longer TTL at its write price (Anthropic's 1-hour writes).
Off-peak: a call whose start (run start + its clock) falls outside the sheet's peak hours is billed × the
off-peak multiplier. Money through `core.cost.usd_for_tokens`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from kokuban.agents.compaction import Calls
from kokuban.core.cost import usd_for_tokens
from kokuban.errors import KokubanError
from kokuban.prices.costing import LANES
from kokuban.prices.sheets import PriceRow, peak_windows

RETENTIONS = ("none", "standard", "extended")


@dataclass(frozen=True)
class CacheRules:
    """How a sheet's cache behaves for one run: prices (USD / M) and the TTL in seconds (inf: not known to expire)."""

    retention: str
    ttl_s: float
    write_usd_per_m: float
    read_usd_per_m: float
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "retention": self.retention,
            "ttl_s": None if math.isinf(self.ttl_s) else self.ttl_s,
            "write_usd_per_m": self.write_usd_per_m,
            "read_usd_per_m": self.read_usd_per_m,
            "notes": list(self.notes),
        }


def cache_rules(row: PriceRow, retention: str = "standard", ttl_s: float | None = None) -> CacheRules:
    """The cache a run gets on `row` under `retention` ("none", "standard", "extended"), `ttl_s` overriding the
    sheet's lifetime. A TTL or a retention asked of a sheet without a cache price is an error saying so."""
    if retention not in RETENTIONS:
        raise KokubanError(f"'{retention}' is not known; allowed: {', '.join(RETENTIONS)}", field="cache_retention",
                           value=retention)
    rules, notes = row.rules, []
    if row.cached_input_usd_per_m is None:
        if ttl_s is not None:
            raise KokubanError(
                f"{row.key} has no prompt cache on its sheet, so a TTL means nothing; drop it, or price a "
                "row with cached_input_usd_per_m",
                field="cache_ttl_s",
                value=ttl_s,
            )
        if retention == "extended":
            raise KokubanError(f"{row.key} has no prompt cache on its sheet; use cache_retention none or standard",
                               field="cache_retention", value=retention)
        retention = "none"
        notes.append("no cached-input price on the sheet: every prompt token billed as input")
    if retention == "none":
        return CacheRules("none", 0.0, row.input_usd_per_m, row.input_usd_per_m, tuple(notes))
    write = row.cache_write_usd_per_m if row.cache_write_usd_per_m is not None else row.input_usd_per_m
    if row.cache_write_usd_per_m is None:
        notes.append("no cache-write price on the sheet: new tokens billed as input")
    ttl = rules.cache_ttl_s
    if retention == "extended":
        if rules.extended_cache_ttl_s is None:
            raise KokubanError(
                f"{row.key} sells no extended cache retention on its sheet; use cache_retention standard",
                field="cache_retention",
                value=retention,
            )
        ttl, write = rules.extended_cache_ttl_s, rules.extended_cache_write_usd_per_m
    if ttl_s is not None:
        ttl = ttl_s
        notes.append(f"TTL {ttl_s:g} s given, not the sheet's")
    if ttl is None:
        ttl = math.inf
        notes.append("the sheet states no cache lifetime: the cache is taken not to expire during the run")
    return CacheRules(retention, float(ttl), float(write), float(row.cached_input_usd_per_m), tuple(notes))


def off_peak(row: PriceRow, start_utc_hour: float | None, weekday: bool, seconds: Any) -> np.ndarray:
    """True where a call starting `seconds` after `start_utc_hour` (UTC) is off-peak on `row`; all False where the
    sheet has no off-peak rule or no start hour is given. With `peak_weekdays_only`, a weekday start is taken as a
    Monday and a weekend start as a Saturday, and the days count on from there."""
    s = np.asarray(seconds, dtype=np.float64)
    rules = row.rules
    if rules.off_peak_multiplier is None or start_utc_hour is None:
        return np.zeros(s.shape, bool)
    hours = start_utc_hour + s / 3600.0
    day = np.floor(hours / 24.0)
    hour = hours - 24.0 * day
    peak = np.zeros(s.shape, bool)
    for lo, hi in peak_windows(rules.peak_hours_utc):
        peak |= (hour >= lo) & (hour < hi)
    if rules.peak_weekdays_only:  # day 0 is the start day: Monday (0) or Saturday (5); Mon–Fri are 0–4
        start_dow = 0 if weekday else 5
        peak &= ((start_dow + day) % 7) < 5
    return ~peak


def api_costs(calls: Calls, row: PriceRow, cache: CacheRules, *, lane: str = "standard",
              start_utc_hour: float | None = None, weekday: bool = True) -> dict[str, np.ndarray]:
    """Per call: tokens read, written and output, whether the cache expired, the long tier, off-peak, and USD
    (input written, read, output, total). Vectorised over every call of every run (see module docstring)."""
    if lane not in LANES:
        raise KokubanError(f"'{lane}' is not known; allowed: {', '.join(LANES)}", field="lane", value=lane)
    mult = 1.0
    if lane != "standard":
        mult = getattr(row, f"{lane}_multiplier")
        if mult is None:
            raise KokubanError(
                f"{row.key} has no {lane} lane on its sheet; use lane standard", field="lane", value=lane
            )
    prompt, out = calls.prompt_tokens, calls.output_tokens
    caching = cache.retention != "none"
    expired = caching & ~calls.first & (calls.gap_before_s > cache.ttl_s)
    read = np.where(caching & ~calls.first & ~expired, np.minimum(calls.api_prefix_tokens, prompt), 0)
    written = prompt - read
    threshold = row.long_context_threshold_tokens
    long = prompt > threshold if threshold is not None else np.zeros(prompt.shape, bool)
    scale = np.where(long, (row.long_input_usd_per_m or row.input_usd_per_m) / row.input_usd_per_m, 1.0)
    out_price = np.where(long, row.long_output_usd_per_m or row.output_usd_per_m, row.output_usd_per_m)
    peak_off = off_peak(row, start_utc_hour, weekday, calls.start_s)
    factor = mult * np.where(peak_off, row.rules.off_peak_multiplier or 1.0, 1.0)
    usd_written = factor * usd_for_tokens(written, cache.write_usd_per_m * scale)
    usd_read = factor * usd_for_tokens(read, cache.read_usd_per_m * scale)
    usd_output = factor * usd_for_tokens(out, out_price)
    return {
        "input_written_tokens": written,
        "input_read_tokens": read,
        "output_tokens": out,
        "cache_expired": expired,
        "long_context_tier": long,
        "off_peak": peak_off,
        "input_written_usd": usd_written,
        "input_read_usd": usd_read,
        "output_usd": usd_output,
        "usd": usd_written + usd_read + usd_output,
    }
