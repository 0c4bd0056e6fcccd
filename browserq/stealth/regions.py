"""Region hints (a proxy's ``#region=``) → the locale and timezones a visitor there would have."""

from __future__ import annotations

#: Region hint (a proxy's ``#region=``) → (locale, timezones it may use). First timezone is the
#: most common; the generator picks among them.
REGIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "us": (
        "en-US",
        ("America/New_York", "America/Chicago", "America/Los_Angeles", "America/Denver"),
    ),
    "ca": ("en-CA", ("America/Toronto", "America/Vancouver", "America/Edmonton")),
    "gb": ("en-GB", ("Europe/London",)),
    "ie": ("en-IE", ("Europe/Dublin",)),
    "au": ("en-AU", ("Australia/Sydney", "Australia/Melbourne", "Australia/Brisbane")),
    "nz": ("en-NZ", ("Pacific/Auckland",)),
    "in": ("en-IN", ("Asia/Kolkata",)),
    "sg": ("en-SG", ("Asia/Singapore",)),
    "de": ("de-DE", ("Europe/Berlin",)),
    "at": ("de-AT", ("Europe/Vienna",)),
    "ch": ("de-CH", ("Europe/Zurich",)),
    "fr": ("fr-FR", ("Europe/Paris",)),
    "be": ("fr-BE", ("Europe/Brussels",)),
    "nl": ("nl-NL", ("Europe/Amsterdam",)),
    "es": ("es-ES", ("Europe/Madrid",)),
    "pt": ("pt-PT", ("Europe/Lisbon",)),
    "it": ("it-IT", ("Europe/Rome",)),
    "pl": ("pl-PL", ("Europe/Warsaw",)),
    "cz": ("cs-CZ", ("Europe/Prague",)),
    "se": ("sv-SE", ("Europe/Stockholm",)),
    "no": ("nb-NO", ("Europe/Oslo",)),
    "dk": ("da-DK", ("Europe/Copenhagen",)),
    "fi": ("fi-FI", ("Europe/Helsinki",)),
    "gr": ("el-GR", ("Europe/Athens",)),
    "ro": ("ro-RO", ("Europe/Bucharest",)),
    "hu": ("hu-HU", ("Europe/Budapest",)),
    "ua": ("uk-UA", ("Europe/Kyiv",)),
    "tr": ("tr-TR", ("Europe/Istanbul",)),
    "br": ("pt-BR", ("America/Sao_Paulo",)),
    "mx": ("es-MX", ("America/Mexico_City",)),
    "ar": ("es-AR", ("America/Argentina/Buenos_Aires",)),
    "jp": ("ja-JP", ("Asia/Tokyo",)),
    "kr": ("ko-KR", ("Asia/Seoul",)),
    "tw": ("zh-TW", ("Asia/Taipei",)),
    "hk": ("zh-HK", ("Asia/Hong_Kong",)),
    "za": ("en-ZA", ("Africa/Johannesburg",)),
}
REGION_ALIASES = {"uk": "gb", "usa": "us", "en": "us"}
US_STATES = {
    "ny": "America/New_York",
    "nj": "America/New_York",
    "fl": "America/New_York",
    "va": "America/New_York",
    "ga": "America/New_York",
    "ma": "America/New_York",
    "pa": "America/New_York",
    "oh": "America/New_York",
    "il": "America/Chicago",
    "tx": "America/Chicago",
    "mn": "America/Chicago",
    "co": "America/Denver",
    "az": "America/Phoenix",
    "ut": "America/Denver",
    "ca": "America/Los_Angeles",
    "wa": "America/Los_Angeles",
    "or": "America/Los_Angeles",
    "nv": "America/Los_Angeles",
}


def resolve_region(region: str | None) -> tuple[str, tuple[str, ...]]:
    """(locale, candidate timezones) for a region hint like ``de``, ``DE``, ``us-ca``, ``uk``.

    ``None`` means the United States (the largest single population of desktop Chrome users).
    An unknown code raises ``ValueError`` naming the known ones: a silently wrong timezone would
    contradict the proxy's exit IP, which is exactly what detectors compare.
    """
    if region is None:
        return REGIONS["us"]
    code = region.strip().lower().replace("_", "-")
    country, _, sub = code.partition("-")
    country = REGION_ALIASES.get(country, country)
    if country not in REGIONS:
        known = ", ".join(sorted(REGIONS))
        raise ValueError(f"unknown region hint {region!r}; known: {known} (optionally us-<state>)")
    locale, zones = REGIONS[country]
    if country == "us" and sub in US_STATES:
        zones = (US_STATES[sub],)
    return locale, zones
