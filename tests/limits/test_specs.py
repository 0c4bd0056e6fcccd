"""How a limit is written: rates, rate maps, tenant caps and blockable kinds (no Redis needed)."""

from __future__ import annotations

import pytest

from browserq.errors import ConfigError
from browserq.limit_specs import BLOCKABLE, Rate, parse_caps, parse_rate_map, validate_block_kinds
from browserq.limits.errors import InvalidBlockKind, InvalidRate, InvalidTenantCaps

# --- rates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "per_s", "burst"),
    [
        ("2/s", 2.0, 1),
        ("30/min", 0.5, 1),
        ("100/h", 100 / 3600, 1),
        ("2/s burst 5", 2.0, 5),
        ("0.5/s", 0.5, 1),
        (" 10 / minute ", 10 / 60, 1),
        ("1/sec", 1.0, 1),
        ("3/hours, burst=2", 3 / 3600, 2),
        ("1/day", 1 / 86400, 1),
        ("5/S BURST 10", 5.0, 10),
        (4, 4.0, 1),
    ],
)
def test_parse_rate(text: str, per_s: float, burst: int) -> None:
    rate = Rate.parse(text)
    assert rate.per_s == pytest.approx(per_s)
    assert rate.burst == burst

@pytest.mark.parametrize(
    "text",
    ["2/x", "abc", "0/s", "2/s burst 0", "-1/s", "2/ms", "", "2", "2/s burst", "2/s burst 1.5"],
)
def test_parse_rate_errors_say_what_is_valid(text: str) -> None:
    with pytest.raises(InvalidRate) as info:
        Rate.parse(text)
    message = str(info.value)
    assert repr(text) in message
    assert any(
        hint in message for hint in ("N/s, N/min or N/h", "above 0", "burst must be at least 1")
    )
    # usable as a config error and inside pydantic validators
    assert isinstance(info.value, ConfigError) and isinstance(info.value, ValueError)

def test_rate_constructor_checks_values() -> None:
    with pytest.raises(InvalidRate, match="positive"):
        Rate(0)
    with pytest.raises(InvalidRate, match="burst"):
        Rate(1.0, 0)

@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("2/s", "2/s"),
        ("30/min", "30/min"),
        ("100/h", "100/h"),
        ("2/s burst 5", "2/s burst 5"),
        ("0.25/s", "15/min"),
    ],
)
def test_rate_prints_back_in_its_own_syntax(text: str, shown: str) -> None:
    assert str(Rate.parse(text)) == shown
    assert Rate.parse(shown) == Rate.parse(text)

def test_rate_map_from_json_or_pairs() -> None:
    assert parse_rate_map('{"Example.com": "2/s", "*": "10/s"}') == {
        "example.com": "2/s",
        "*": "10/s",
    }
    assert parse_rate_map("example.com=2/s burst 5; *.shop.example = 30/min;*=off") == {
        "example.com": "2/s burst 5",
        "shop.example": "30/min",
        "*": "unlimited",
    }
    assert parse_rate_map({"a.example": 3}) == {"a.example": "3/s"}
    assert parse_rate_map("") == {} == parse_rate_map(None)

def test_rate_map_reports_every_problem() -> None:
    with pytest.raises(InvalidRate) as info:
        parse_rate_map({"https://example.com/": "2/s", "ok.example": "fast", "fine.example": "1/s"})
    message = str(info.value)
    assert "https://example.com/" in message and "bare host name" in message
    assert "'fast'" in message
    with pytest.raises(InvalidRate, match="host=rate"):
        parse_rate_map("example.com 2/s")
    with pytest.raises(InvalidRate, match="invalid JSON"):
        parse_rate_map('{"example.com": }')


# --- tenant caps ---------------------------------------------------------------------------------
def test_parse_caps() -> None:
    assert parse_caps('{"acme": 2, "*": 5}') == {"acme": 2, "*": 5}
    assert parse_caps("acme=2; globex = 0; *=5") == {"acme": 2, "globex": 0, "*": 5}
    assert parse_caps("") == {} == parse_caps(None)
    with pytest.raises(InvalidTenantCaps) as info:
        parse_caps({"acme": -1, "bad name": 2, "ok": "two"})
    message = str(info.value)
    assert "'acme'" in message and "'bad name'" in message and "'ok'" in message
    with pytest.raises(InvalidTenantCaps, match="tenant=cap"):
        parse_caps("acme 2")


# --- blockable kinds -----------------------------------------------------------------------------
def test_validate_block_kinds() -> None:
    assert validate_block_kinds(["image", "Font", "media"]) == {"image", "font", "media"}
    assert validate_block_kinds(None) == frozenset() == validate_block_kinds([])
    assert validate_block_kinds("stylesheet") == {"stylesheet"}
    assert {"image", "font", "media", "stylesheet"} == BLOCKABLE
    with pytest.raises(InvalidBlockKind) as info:
        validate_block_kinds(["images", "css", "script"])
    message = str(info.value)
    assert "'images' (did you mean 'image'?)" in message
    assert "'css' (did you mean 'stylesheet'?)" in message
    assert "'script'" in message
    assert "valid kinds: font, image, media, stylesheet" in message
    assert isinstance(info.value, ConfigError) and isinstance(info.value, ValueError)
