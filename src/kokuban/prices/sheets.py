"""API price sheets: the bundled dataset (data/prices.toml), users' own files, validation, lookup.

A row is one provider × model: USD per million tokens for input, output, cached input, and the
sheet's tiers (long context, batch / flex / priority lanes). Every row carries its source and the
date it was read. Rows are validated on load: an inconsistent sheet (output below zero, cached
input above input, a long-context tier cheaper than the standard one, a "discount" above 1…) is a
`KokubanError` naming the file, the row and the field.

Agent-run rules (`SheetRules`, an additive extension read by `kokuban agent`): how long a cached prefix
lives (`cache_ttl_s`), a longer retention sold at its own write price (`extended_cache_ttl_s`,
`extended_cache_write_usd_per_m`: Anthropic's 1-hour writes), and off-peak billing (`off_peak_multiplier`,
`peak_hours_utc`, `peak_weekdays_only`), with their own `rules_source`/`rules_retrieved`/`rules_notes`. They
live in `PriceRow.rules`, outside `PriceRow.as_dict()`, so every existing command's JSON stays the same.

A user's file uses the same schema (any number of `[[price]]` tables); its rows take precedence
over bundled rows with the same provider/model.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from kokuban.errors import KokubanError, unknown_name

BUNDLED = "prices.toml"
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: The largest figure a sheet may hold (USD per million tokens, tokens, tokens/s): far above any real sheet, and
#: small enough that a cost built from it stays finite.
SHEET_MAX = 1e12


def _is_date(text: Any) -> bool:
    """A real calendar date written YYYY-MM-DD (2026-13-45 is not one)."""
    import datetime

    if not (isinstance(text, str) and DATE.match(text)):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


PEAK_WINDOW = re.compile(r"^(\d{1,2})-(\d{1,2})$")


def peak_windows(text: str) -> tuple[tuple[int, int], ...]:
    """'01-04,06-10' → ((1, 4), (6, 10)): UTC hour windows [start, end), 0 ≤ start < end ≤ 24."""
    out = []
    for part in text.split(","):
        m = PEAK_WINDOW.match(part.strip())
        if not m or not 0 <= int(m[1]) < int(m[2]) <= 24:
            raise ValueError(part)
        out.append((int(m[1]), int(m[2])))
    return tuple(out)


@dataclass(frozen=True)
class SheetRules:
    """The rules an agent run needs beyond per-token prices. None/"" where the sheet says nothing.

    cache_ttl_s: seconds a cached prefix survives without use (each read refreshes it);
    extended_cache_ttl_s / extended_cache_write_usd_per_m: a longer retention and its write price;
    off_peak_multiplier: every price × this outside `peak_hours_utc` (UTC hour windows "HH-HH,…"), on weekdays
    only when `peak_weekdays_only` (weekends are then off-peak all day).
    """

    cache_ttl_s: float | None = None
    extended_cache_ttl_s: float | None = None
    extended_cache_write_usd_per_m: float | None = None
    off_peak_multiplier: float | None = None
    peak_hours_utc: str = ""
    peak_weekdays_only: bool = False
    rules_source: str = ""
    rules_retrieved: str = ""
    rules_notes: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


RULES = {f.name for f in fields(SheetRules)}


@dataclass(frozen=True)
class PriceRow:
    """One price sheet row. Money in USD per million tokens; None where the sheet has no such price."""

    provider: str
    model: str
    input_usd_per_m: float
    output_usd_per_m: float
    source: str
    retrieved: str
    open_model: str = ""
    cached_input_usd_per_m: float | None = None
    cache_write_usd_per_m: float | None = None
    long_context_threshold_tokens: int | None = None
    long_input_usd_per_m: float | None = None
    long_output_usd_per_m: float | None = None
    batch_multiplier: float | None = None
    flex_multiplier: float | None = None
    priority_multiplier: float | None = None
    fast_output_tokens_per_s: float | None = None
    output_tokens_per_s: float | None = None
    speed_source: str = ""
    context_window_tokens: int | None = None
    as_of: str = ""
    notes: str = ""
    origin: str = ""  # the file the row came from (not part of the schema)
    rules: SheetRules = field(default_factory=SheetRules)  # agent-run rules (outside as_dict: see module docstring)

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.model}"

    @property
    def is_open(self) -> bool:
        return bool(self.open_model)

    def as_dict(self) -> dict[str, Any]:
        """The row's price-sheet fields (without `rules`, whose dict is `rules.as_dict()`) and its key."""
        out = asdict(self)
        out.pop("rules")
        return out | {"key": self.key}


SCHEMA = ({f.name for f in fields(PriceRow)} - {"origin", "rules"}) | RULES
REQUIRED = ("provider", "model", "input_usd_per_m", "output_usd_per_m", "source", "retrieved")
MONEY = ("input_usd_per_m", "output_usd_per_m", "cached_input_usd_per_m", "cache_write_usd_per_m",
         "long_input_usd_per_m", "long_output_usd_per_m")
POSITIVE = ("long_context_threshold_tokens", "fast_output_tokens_per_s", "output_tokens_per_s", "context_window_tokens")
TEXT = ("provider", "model", "source", "retrieved", "open_model", "speed_source", "as_of", "notes", "peak_hours_utc",
        "rules_source", "rules_retrieved", "rules_notes")


def validate_entry(entry: dict[str, Any], where: str) -> PriceRow:
    """Check one `[[price]]` table and build the row; the first problem raises a one-line error.

    Rules: known keys only; provider, model, input, output, source, retrieved present; money ≥ 0;
    cached input ≤ input; cache write ≥ cached input; long-context tier ≥ the standard price and
    only with a threshold (and vice versa); batch and flex multipliers in (0, 1]; priority ≥ 1;
    speeds, threshold and context window > 0; threshold ≤ context window; dates YYYY-MM-DD;
    `open_model` a catalog model id.
    """
    if not isinstance(entry, dict):
        raise KokubanError(f"{where}: a [[price]] entry must be a table of fields, got {entry!r:.60}")
    name = f"{entry.get('provider', '?')}/{entry.get('model', '?')}"
    at = f"{where} ({name})"

    def bad(field: str, why: str) -> KokubanError:
        return KokubanError(f"{at}: {field} {why}")

    unknown = sorted(set(entry) - SCHEMA)
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], SCHEMA, n=1)
        raise bad(unknown[0], "is not a price-sheet field" + (f"; did you mean {close[0]}?" if close else ""))
    for key in REQUIRED:
        if entry.get(key) in (None, ""):
            raise bad(key, "is missing (required: " + ", ".join(REQUIRED) + ")")
    for key in TEXT:
        if key in entry and not isinstance(entry[key], str):
            raise bad(key, f"must be text, got {entry[key]!r}")
    for key in MONEY + POSITIVE + ("batch_multiplier", "flex_multiplier", "priority_multiplier"):
        value = entry.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or abs(value) > SHEET_MAX):
            raise bad(key, f"must be a finite number up to {SHEET_MAX:g}, got {value!r}")
    for key in ("long_context_threshold_tokens", "context_window_tokens"):
        if key in entry and not float(entry[key]).is_integer():
            raise bad(key, f"must be a whole number of tokens, got {entry[key]!r}")
    for key in MONEY:
        if key in entry and entry[key] < 0:
            raise bad(key, f"is {entry[key]!r}; a price cannot be below zero")
    for key in POSITIVE:
        if key in entry and entry[key] <= 0:
            raise bad(key, f"is {entry[key]!r}; it must be > 0")
    e = entry.get
    if e("cached_input_usd_per_m") is not None and e("cached_input_usd_per_m") > e("input_usd_per_m"):
        raise bad(
            "cached_input_usd_per_m",
            f"{e('cached_input_usd_per_m')} exceeds input_usd_per_m {e('input_usd_per_m')}; "
            "cached input must cost at most uncached input",
        )
    if e("cache_write_usd_per_m") is not None and e("cached_input_usd_per_m") is not None \
            and e("cache_write_usd_per_m") < e("cached_input_usd_per_m"):
        raise bad("cache_write_usd_per_m", f"{e('cache_write_usd_per_m')} is below cached_input_usd_per_m "
                  f"{e('cached_input_usd_per_m')}; writing a cache cannot cost less than reading it")
    has_long = e("long_input_usd_per_m") is not None or e("long_output_usd_per_m") is not None
    if has_long and e("long_context_threshold_tokens") is None:
        raise bad("long_context_threshold_tokens", "is missing but a long-context price is given")
    if e("long_context_threshold_tokens") is not None and not has_long:
        raise bad("long_input_usd_per_m", "is missing but long_context_threshold_tokens is given")
    for long_key, std_key in (
        ("long_input_usd_per_m", "input_usd_per_m"),
        ("long_output_usd_per_m", "output_usd_per_m"),
    ):
        if e(long_key) is not None and e(long_key) < e(std_key):
            raise bad(long_key, f"{e(long_key)} is below {std_key} {e(std_key)}; a long-context tier is a surcharge")
    for key in ("batch_multiplier", "flex_multiplier"):
        if e(key) is not None and not 0 < e(key) <= 1:
            raise bad(key, f"is {e(key)!r}; a discount multiplier must be in (0, 1]")
    if e("priority_multiplier") is not None and e("priority_multiplier") < 1:
        raise bad("priority_multiplier", f"is {e('priority_multiplier')!r}; a priority lane multiplier must be ≥ 1")
    if e("long_context_threshold_tokens") and e("context_window_tokens") \
            and e("long_context_threshold_tokens") > e("context_window_tokens"):
        raise bad(
            "long_context_threshold_tokens",
            f"{e('long_context_threshold_tokens')} exceeds context_window_tokens {e('context_window_tokens')}",
        )
    for key in ("retrieved", "as_of"):
        if e(key) and not _is_date(e(key)):
            raise bad(key, f"is {e(key)!r}; dates are YYYY-MM-DD")
    if e("open_model"):
        from kokuban.specs.catalog import model_catalog

        if e("open_model") not in model_catalog():
            err = unknown_name("model", e("open_model"), model_catalog())
            raise bad("open_model", f"names no catalog model: {err}")
    _check_rules(entry, bad)
    ints = {k: int(entry[k]) for k in ("long_context_threshold_tokens", "context_window_tokens") if k in entry}
    base = {k: v for k, v in (entry | ints).items() if k not in RULES}
    rules = SheetRules(**{k: v for k, v in entry.items() if k in RULES})
    return PriceRow(**base, origin=where.split(" row")[0], rules=rules)


def _check_rules(entry: dict[str, Any], bad: Any) -> None:
    """The agent-run rules: TTLs > 0 and only with a cached-input price; the extended retention longer than the
    standard one and written at ≥ the standard write (or input) price; off-peak multiplier in (0, 1] with its
    peak windows (and vice versa); `rules_source` a URL and `rules_retrieved` a date whenever a rule is given."""
    e = entry.get
    for key in ("cache_ttl_s", "extended_cache_ttl_s", "extended_cache_write_usd_per_m", "off_peak_multiplier"):
        value = e(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0
            or value > SHEET_MAX
        ):
            raise bad(key, f"is {value!r}; it must be a number > 0 and at most {SHEET_MAX:g}")
    if "peak_weekdays_only" in entry and not isinstance(e("peak_weekdays_only"), bool):
        raise bad("peak_weekdays_only", f"must be true or false, got {e('peak_weekdays_only')!r}")
    for key in ("cache_ttl_s", "extended_cache_ttl_s", "extended_cache_write_usd_per_m"):
        if e(key) is not None and e("cached_input_usd_per_m") is None:
            raise bad(key, "is given but the row has no cached_input_usd_per_m: a cache lifetime needs a cache")
    if (e("extended_cache_ttl_s") is None) != (e("extended_cache_write_usd_per_m") is None):
        raise bad("extended_cache_ttl_s", "and extended_cache_write_usd_per_m go together: give both or neither")
    if (
        e("extended_cache_ttl_s") is not None
        and e("cache_ttl_s") is not None
        and e("extended_cache_ttl_s") <= e("cache_ttl_s")
    ):
        raise bad(
            "extended_cache_ttl_s", f"{e('extended_cache_ttl_s')} is not longer than cache_ttl_s {e('cache_ttl_s')}"
        )
    floor = e("cache_write_usd_per_m") if e("cache_write_usd_per_m") is not None else e("input_usd_per_m")
    if e("extended_cache_write_usd_per_m") is not None and e("extended_cache_write_usd_per_m") < floor:
        raise bad(
            "extended_cache_write_usd_per_m",
            f"{e('extended_cache_write_usd_per_m')} is below the standard write "
            f"price {floor}; a longer retention is not cheaper to write",
        )
    if e("off_peak_multiplier") is not None and e("off_peak_multiplier") > 1:
        raise bad("off_peak_multiplier", f"is {e('off_peak_multiplier')!r}; an off-peak discount must be in (0, 1]")
    if (e("off_peak_multiplier") is None) != (not e("peak_hours_utc")):
        raise bad("peak_hours_utc", "and off_peak_multiplier go together: give both or neither")
    if e("peak_hours_utc"):
        try:
            peak_windows(e("peak_hours_utc"))
        except ValueError as exc:
            raise bad("peak_hours_utc", f"window '{exc.args[0]}' is not HH-HH with 0 ≤ start < end ≤ 24 "
                      "(e.g. \"01-04,06-10\")") from None
    if any(k in entry for k in RULES - {"rules_source", "rules_retrieved", "rules_notes"}):
        if not str(e("rules_source") or "").startswith("http"):
            raise bad("rules_source", "is missing: cache and off-peak rules need the page they come from")
        if not _is_date(e("rules_retrieved")):
            raise bad("rules_retrieved", "is missing or not YYYY-MM-DD: cache and off-peak rules need a date")


def _read(path: Any, label: str) -> list[dict[str, Any]]:
    from kokuban.specs.files import read_toml

    data = read_toml(path, "price file")
    rows = data.get("price", [])
    if not isinstance(rows, list) or not rows:
        raise KokubanError(f"price file '{label}' holds no [[price]] tables")
    return rows


def read_price_file(path: str | Path) -> list[PriceRow]:
    """Validate every row of one price file (duplicate provider/model within a file is an error)."""
    label = str(path)
    source = resources.files("kokuban") / "data" / BUNDLED if label == BUNDLED else Path(path)
    out: list[PriceRow] = []
    seen: set[str] = set()
    for i, entry in enumerate(_read(source, label), start=1):
        row = validate_entry(entry, f"{label} row {i}")
        if row.key in seen:
            raise KokubanError(f"{label} row {i} ({row.key}): provider/model appears twice in this file")
        seen.add(row.key)
        out.append(row)
    return out


def load_prices(files: tuple[str | Path, ...] | list[str | Path] = (), *, bundled: bool = True) -> list[PriceRow]:
    """The bundled rows then each user file's rows; a later row replaces an earlier one with the same key."""
    rows: dict[str, PriceRow] = {}
    for f in ((BUNDLED,) if bundled else ()) + tuple(files):
        for row in read_price_file(f):
            rows.pop(row.key, None)
            rows[row.key] = row
    return list(rows.values())


def prices_frame(rows: list[PriceRow] | None = None):
    """The rows as a pandas DataFrame (one column per schema field, plus `key`; NaN where absent)."""
    import pandas as pd

    rows = load_prices() if rows is None else rows
    return pd.DataFrame([r.as_dict() for r in rows])


def find_price(name: str, rows: list[PriceRow] | None = None) -> PriceRow:
    """Look up `provider/model` (or a bare model name when it is unique), suggesting close names."""
    rows = load_prices() if rows is None else rows
    by_key = {r.key: r for r in rows}
    key = name.strip().lower()
    if key in by_key:
        return by_key[key]
    if "/" not in key:
        hits = [r for r in rows if r.model == key]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise KokubanError(f"price '{name}' is ambiguous: {', '.join(r.key for r in hits)} (write provider/model)")
    provider = key.split("/")[0]
    if "/" in key and provider not in {r.provider for r in rows}:
        err = unknown_name("provider", provider, {r.provider for r in rows})
        raise KokubanError(str(err).replace("`kokuban providers`", "`kokuban prices list`"))
    raise KokubanError(str(unknown_name("price", name, by_key)).replace("`kokuban prices`", "`kokuban prices list`"))


def hand_price(input_usd_per_m: float, output_usd_per_m: float, *, cached_input_usd_per_m: float | None = None,
               open_model: str = "", name: str = "given") -> PriceRow:
    """A price typed by hand (`--input-price/--output-price`), validated like a file row."""
    entry: dict[str, Any] = {"provider": "hand", "model": name, "input_usd_per_m": input_usd_per_m,
                             "output_usd_per_m": output_usd_per_m, "source": "given on the command line",
                             "retrieved": "2000-01-01", "open_model": open_model}
    if cached_input_usd_per_m is not None:
        entry["cached_input_usd_per_m"] = cached_input_usd_per_m
    return validate_entry(entry, "hand-typed price")
