"""The price sheet's agent-run rules: additive (existing rows' JSON unchanged), sourced, validated."""

from __future__ import annotations

import pytest

from kokuban.errors import KokubanError
from kokuban.prices.sheets import RULES, find_price, load_prices, read_price_file

GOOD = """
[[price]]
provider = "acme"
model = "m1"
input_usd_per_m = 1.0
output_usd_per_m = 4.0
cached_input_usd_per_m = 0.1
cache_write_usd_per_m = 1.25
source = "https://example.com/pricing"
retrieved = "2026-01-01"
"""
RULE_SOURCE = 'rules_source = "https://example.com/caching"\nrules_retrieved = "2026-01-01"\n'


def test_rules_stay_out_of_the_rows_json():
    for row in load_prices():
        assert not set(row.as_dict()) & RULES, row.key
        assert "rules" not in row.as_dict()


def test_anthropic_ttls_and_hour_writes_from_the_sheet():
    # pricing page row 'Claude Sonnet 4.5 … $3.75 (5m) … $6 (1h) … $0.30 (hits)': 1.25× and 2× of $3 input
    r = find_price("anthropic/claude-sonnet-4.5")
    assert (r.rules.cache_ttl_s, r.rules.extended_cache_ttl_s) == (300.0, 3600.0)
    assert (
        r.cache_write_usd_per_m == 1.25 * r.input_usd_per_m
        and r.rules.extended_cache_write_usd_per_m == 2 * r.input_usd_per_m
    )


def test_every_rule_row_has_its_own_source_and_date():
    for row in load_prices():
        given = [
            k
            for k in RULES - {"rules_source", "rules_retrieved", "rules_notes", "peak_hours_utc", "peak_weekdays_only"}
            if getattr(row.rules, k) is not None
        ]
        if given:
            assert row.rules.rules_source.startswith("http") and row.rules.rules_retrieved, row.key


def test_deepseek_off_peak_is_half_outside_its_peak_hours():
    r = find_price("deepseek/deepseek-v4-pro")
    assert r.rules.off_peak_multiplier == 0.5 and r.rules.peak_hours_utc == "01-04,06-10" and r.rules.peak_weekdays_only


@pytest.mark.parametrize(
    "extra, field",
    [
        ("cache_ttl_s = -5.0\n" + RULE_SOURCE, "cache_ttl_s"),
        ("extended_cache_ttl_s = 3600.0\n" + RULE_SOURCE, "extended_cache_ttl_s"),
        (
            "cache_ttl_s = 300.0\nextended_cache_ttl_s = 200.0\nextended_cache_write_usd_per_m = 2.0\n" + RULE_SOURCE,
            "extended_cache_ttl_s",
        ),
        (
            "extended_cache_ttl_s = 3600.0\nextended_cache_write_usd_per_m = 1.0\n" + RULE_SOURCE,
            "extended_cache_write_usd_per_m",
        ),
        ("off_peak_multiplier = 0.5\n" + RULE_SOURCE, "peak_hours_utc"),
        ('off_peak_multiplier = 0.5\npeak_hours_utc = "10-05"\n' + RULE_SOURCE, "peak_hours_utc"),
        ('off_peak_multiplier = 1.5\npeak_hours_utc = "01-04"\n' + RULE_SOURCE, "off_peak_multiplier"),
        ("cache_ttl_s = 300.0\n", "rules_source"),
    ],
)
def test_bad_rules_are_one_line_errors(tmp_path, extra, field):
    path = tmp_path / "p.toml"
    path.write_text(GOOD + extra)
    with pytest.raises(KokubanError) as exc:
        read_price_file(path)
    assert field in str(exc.value) and "row 1 (acme/m1)" in str(exc.value) and "\n" not in str(exc.value)


def test_a_ttl_needs_a_cache(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(
        GOOD.replace("cached_input_usd_per_m = 0.1\ncache_write_usd_per_m = 1.25\n", "")
        + "cache_ttl_s = 300.0\n"
        + RULE_SOURCE
    )
    with pytest.raises(KokubanError, match="no cached_input_usd_per_m"):
        read_price_file(path)
