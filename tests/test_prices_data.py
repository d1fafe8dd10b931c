"""The price-sheet dataset: every bundled row sourced and valid; bad rows rejected with row + field."""

from __future__ import annotations

import re

import pytest

from kokuban.errors import KokubanError
from kokuban.prices.sheets import find_price, hand_price, load_prices, prices_frame, read_price_file

GOOD = """
[[price]]
provider = "acme"
model = "m1"
open_model = "llama-3.1-8b"
input_usd_per_m = 1.0
output_usd_per_m = 4.0
cached_input_usd_per_m = 0.1
source = "https://example.com/pricing"
retrieved = "2026-01-01"
"""


def write(tmp_path, text: str, name: str = "p.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_every_bundled_row_has_source_and_retrieved_and_validates():
    rows = load_prices()
    assert len(rows) >= 35
    for r in rows:
        assert r.source.startswith("http"), r.key
        assert re.match(r"^\d{4}-\d{2}-\d{2}$", r.retrieved), r.key
        assert r.output_usd_per_m >= 0 and r.input_usd_per_m >= 0
        if r.cached_input_usd_per_m is not None:
            assert r.cached_input_usd_per_m <= r.input_usd_per_m, r.key


def test_bundled_deepseek_r1_row_matches_day6_footnote():
    # DeepSeek Day 6: "R1 Pricing: $0.14/M input tokens (cache hit), $0.55/M input tokens (cache miss), $2.19/M output"
    r = find_price("deepseek/deepseek-reasoner")
    assert (r.cached_input_usd_per_m, r.input_usd_per_m, r.output_usd_per_m) == (0.14, 0.55, 2.19)
    assert r.open_model == "deepseek-r1"


@pytest.mark.parametrize("change, field", [
    ("output_usd_per_m = -1.0", "output_usd_per_m"),
    ("cached_input_usd_per_m = 2.0", "cached_input_usd_per_m"),
    ("batch_multiplier = 1.5", "batch_multiplier"),
    ("priority_multiplier = 0.5", "priority_multiplier"),
    ("long_context_threshold_tokens = 1000\nlong_input_usd_per_m = 0.5", "long_input_usd_per_m"),
    ("long_input_usd_per_m = 2.0", "long_context_threshold_tokens"),
    ("retrieved = \"Jan 2026\"", "retrieved"),
    ("open_model = \"llama-3.1-8\"", "open_model"),
    ("ouput_usd_per_m = 3.0", "ouput_usd_per_m"),
    ("source = \"\"", "source"),
])
def test_inconsistent_rows_are_one_line_errors_naming_row_and_field(tmp_path, change, field):
    key = change.split(" = ")[0].split("\n")[0]
    text = "\n".join(line for line in GOOD.splitlines() if not line.startswith(key + " =")) + "\n" + change + "\n"
    with pytest.raises(KokubanError) as exc:
        read_price_file(write(tmp_path, text))
    msg = str(exc.value)
    assert "\n" not in msg and "row 1 (acme/m1)" in msg and field in msg


def test_typo_suggests_the_field(tmp_path):
    with pytest.raises(KokubanError, match="did you mean output_usd_per_m"):
        read_price_file(write(tmp_path, GOOD + "ouput_usd_per_m = 3.0\n"))


def test_duplicate_row_in_one_file(tmp_path):
    with pytest.raises(KokubanError, match="row 2 .*appears twice"):
        read_price_file(write(tmp_path, GOOD + GOOD))


def test_user_file_adds_and_overrides(tmp_path):
    override = GOOD.replace('"acme"', '"deepseek"').replace('"m1"', '"deepseek-chat"')
    rows = load_prices([write(tmp_path, GOOD + override)])
    assert find_price("acme/m1", rows).output_usd_per_m == 4.0
    assert find_price("deepseek/deepseek-chat", rows).output_usd_per_m == 4.0  # the user's row wins
    assert len(rows) == len(load_prices()) + 1


def test_unknown_names_suggest_close_ones():
    with pytest.raises(KokubanError, match="did you mean deepseek"):
        find_price("deepsek/deepseek-chat")
    with pytest.raises(KokubanError, match="openai/gpt-5.5"):
        find_price("openai/gpt-5.5x")


def test_frame_has_one_row_per_price_and_schema_columns():
    df = prices_frame()
    assert len(df) == len(load_prices())
    assert {"key", "input_usd_per_m", "output_usd_per_m", "source", "retrieved"} <= set(df.columns)


def test_hand_price_is_validated():
    with pytest.raises(KokubanError, match="cached_input_usd_per_m"):
        hand_price(1.0, 2.0, cached_input_usd_per_m=3.0)
