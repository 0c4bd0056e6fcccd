"""Client-hint brand lists and Accept-Language: Chrome's own derivation rules, reproduced."""

from __future__ import annotations

from browserq.stealth.hints import accept_language_header, brand_list, sec_ch_ua

VERSION = "156.0.8078.108"


def test_brand_lists_follow_chromes_grease_algorithm() -> None:
    # Known real values: Chrome 120 and 124 sent these; Chromium 156 here reports the 2-brand one.
    brands, _ = brand_list(120, "120.0.6099.71", "Google Chrome")
    assert [(b["brand"], b["version"]) for b in brands] == [
        ("Not_A Brand", "8"),
        ("Chromium", "120"),
        ("Google Chrome", "120"),
    ]
    brands, full = brand_list(124, "124.0.6367.60", "Google Chrome")
    assert [(b["brand"], b["version"]) for b in brands] == [
        ("Chromium", "124"),
        ("Google Chrome", "124"),
        ("Not-A.Brand", "99"),
    ]
    assert full[2] == {"brand": "Not-A.Brand", "version": "99.0.0.0"}
    brands, full = brand_list(156, VERSION, "Chromium")
    assert [(b["brand"], b["version"]) for b in brands] == [
        ("Not:A-Brand", "8"),
        ("Chromium", "156"),
    ]
    assert full == [
        {"brand": "Not:A-Brand", "version": "8.0.0.0"},
        {"brand": "Chromium", "version": VERSION},
    ]


def test_accept_language_expansion_matches_chrome() -> None:
    # Values observed from Chromium 156 with --accept-lang.
    assert accept_language_header(["de-DE"]) == "de-DE,de;q=0.9"
    assert accept_language_header(["en-US", "en"]) == "en-US,en;q=0.9"
    assert (
        accept_language_header(["de-DE", "de", "en-US", "en"])
        == "de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7"
    )
    assert accept_language_header(["fr"]) == "fr"


def test_sec_ch_ua_is_the_structured_header_form() -> None:
    brands, _ = brand_list(156, VERSION, "Chromium")
    assert sec_ch_ua(brands) == '"Not:A-Brand";v="8", "Chromium";v="156"'
