"""What Chrome sends about itself: client-hint brand lists and the Accept-Language header.

Both are derived by Chrome from other values (the major version, ``navigator.languages``) by fixed
rules; reproducing those rules exactly matters, because a list in another order is a tell.
"""

from __future__ import annotations

from collections.abc import Sequence

_GREASE_CHARS = (" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_")
_GREASE_VERSIONS = ("8", "99", "24")
_ORDERS_2 = ((0, 1), (1, 0))
_ORDERS_3 = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))


def brand_list(
    major: int, full_version: str, brand: str
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The ``brands`` and ``fullVersionList`` Chrome reports for ``major``, GREASE included.

    Chrome derives the GREASE ("Not?A_Brand") entry and the order of the list from the major
    version, so every real Chrome 156 sends the same list; reproducing it exactly matters — a list
    in another order is a tell. Checked against the browser's own list in the tests.
    """
    grease = f"Not{_GREASE_CHARS[major % 11]}A{_GREASE_CHARS[(major + 1) % 11]}Brand"
    grease_version = _GREASE_VERSIONS[major % 3]
    entries = [
        (grease, grease_version, f"{grease_version}.0.0.0"),
        ("Chromium", str(major), full_version),
    ]
    if brand != "Chromium":
        entries.append((brand, str(major), full_version))
        order: tuple[int, ...] = _ORDERS_3[major % 6]
    else:
        order = _ORDERS_2[major % 2]
    placed: list[tuple[str, str, str]] = [entries[0]] * len(entries)
    for entry, slot in zip(entries, order, strict=True):
        placed[slot] = entry
    return (
        [{"brand": b, "version": v} for b, v, _ in placed],
        [{"brand": b, "version": f} for b, _, f in placed],
    )


def sec_ch_ua(brands: Sequence[dict[str, str]]) -> str:
    """Structured-header form of a brand list: ``"Chromium";v="156", ...``."""
    return ", ".join(f'"{b["brand"]}";v="{b["version"]}"' for b in brands)


def accept_language_header(languages: Sequence[str]) -> str:
    """The ``Accept-Language`` header Chrome sends for ``navigator.languages``.

    Chrome adds the base language after a run of regional variants that lacks it
    (``["de-DE"]`` → ``de-DE,de;q=0.9``) and gives q-values falling by 0.1 (never below 0.1).
    """
    expanded: list[str] = []
    langs = list(languages)
    for i, lang in enumerate(langs):
        expanded.append(lang)
        base = lang.split("-")[0]
        nxt = langs[i + 1].split("-")[0] if i + 1 < len(langs) else None
        if base != lang and nxt != base and base not in langs and base not in expanded:
            expanded.append(base)
    parts = []
    for i, lang in enumerate(expanded):
        if i == 0:
            parts.append(lang)
        else:
            parts.append(f"{lang};q={max(0.1, round(1 - i / 10, 1)):g}")
    return ",".join(parts)
