"""Region hints to locale and timezones: known codes, aliases, US states, and a loud unknown."""

from __future__ import annotations

import pytest

from browserq.stealth.regions import REGION_ALIASES, REGIONS, US_STATES, resolve_region


def test_regions() -> None:
    assert resolve_region("de") == ("de-DE", ("Europe/Berlin",))
    assert resolve_region("DE") == ("de-DE", ("Europe/Berlin",))
    assert resolve_region("uk")[0] == "en-GB"
    assert resolve_region("us-ca") == ("en-US", ("America/Los_Angeles",))
    assert resolve_region(None)[0] == "en-US"
    with pytest.raises(ValueError, match="unknown region hint 'xx'"):
        resolve_region("xx")


def test_every_alias_and_state_resolves_to_a_known_region() -> None:
    assert all(target in REGIONS for target in REGION_ALIASES.values())
    us_zones = set(REGIONS["us"][1]) | {"America/Phoenix"}
    assert all(zone in us_zones for zone in US_STATES.values())
    assert resolve_region("us_tx") == ("en-US", ("America/Chicago",))  # "_" reads as "-"
    assert resolve_region("fr-xx") == REGIONS["fr"]  # a subdivision outside the US is ignored
