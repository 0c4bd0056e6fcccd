"""How a limit is written: the pure parsers of rates, tenant caps and blockable resource kinds.

The settings (``BROWSERQ_RATE_LIMITS``, ``BROWSERQ_TENANT_CAPS``) and the template schema
(``settings.rate_limits``, ``settings.block_resources``) validate with these, and the limiters
(:mod:`browserq.limits`) read what they return. A leaf below all three: it imports neither the
settings nor the templates nor the limiters (nor Redis), so the direction is
settings → limit_specs ← templates, and limits → limit_specs; its errors are in :mod:`browserq.errors`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from browserq.errors import InvalidBlockKind, InvalidRate, InvalidTenantCaps
from browserq.guards import normalize_host

#: The Redis that fleet-wide state (limits, proxy health) falls back to when neither its own
#: setting nor the broker names one (see ``Settings.shared_redis_url``).
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
#: The key of the default entry of a rate map or a caps map ("every other host / tenant").
DEFAULT_KEY = "*"
UNLIMITED_WORDS = frozenset({"unlimited", "off", "none"})
#: A tenant name: what the store keeps and a Redis key may hold.
TENANT_NAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,200}$")
#: Playwright ``resource_type`` values a template may block.
BLOCKABLE: frozenset[str] = frozenset({"image", "font", "media", "stylesheet"})

_UNITS: dict[str, float] = {
    "s": 1.0, "sec": 1.0, "second": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0,
    "h": 3600.0, "hr": 3600.0, "hour": 3600.0,
    "d": 86400.0, "day": 86400.0,
}  # fmt: skip
_RATE = re.compile(
    r"^\s*(?P<n>\d+(?:\.\d+)?|\.\d+)\s*/\s*(?P<unit>[a-z]+)\s*"
    r"(?:,?\s*burst\s*[=:]?\s*(?P<burst>\d+))?\s*$",
    re.IGNORECASE,
)
RATE_FORMAT = (
    'N/s, N/min or N/h, optionally followed by "burst B" (e.g. "2/s", "30/min", "2/s burst 5")'
)


def read_mapping(
    value: Mapping[str, Any] | str | None,
    *,
    what: str,
    pair: str,
    example: str,
    error: type[Exception],
    separators: str = ";\n",
) -> Mapping[str, Any]:
    """The raw mapping (values not yet validated) of a mapping, a JSON object or ``a=b; c=d``
    pairs; ``error`` names ``what`` and how to write it."""
    if value is None:
        return {}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise error(f"{what}: invalid JSON ({exc.msg} at char {exc.pos})") from None
            if not isinstance(value, dict):
                raise error(f"{what}: expected a JSON object of {pair.replace('=', ' to ')}")
        else:
            pairs: dict[str, Any] = {}
            for part in filter(None, (p.strip() for p in re.split(f"[{separators}]", text))):
                key, sep, item = part.partition("=")
                if not sep:
                    raise error(f"{what}: {part!r} is not {pair} (e.g. {example!r})")
                pairs[key.strip()] = item.strip()
            value = pairs
    if not isinstance(value, Mapping):
        raise error(f"{what}: expected a mapping of {pair.replace('=', ' to ')}, got {type(value).__name__}")
    return value


# --- rates ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Rate:
    """``per_s`` tokens per second, at most ``burst`` saved up."""

    per_s: float
    burst: int = 1

    def __post_init__(self) -> None:
        if not (self.per_s > 0 and math.isfinite(self.per_s)):
            raise InvalidRate(f"a rate must be a positive number per second, got {self.per_s!r}")
        burst: object = self.burst  # whatever the caller passed, until checked here
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise InvalidRate(f"burst must be a whole number >= 1, got {burst!r}")

    @classmethod
    def parse(cls, text: str | int | float | Rate) -> Rate:
        """``"2/s"``, ``"30/min"``, ``"100/h"``, ``"2/s burst 5"``; a bare number is per second.

        Without ``burst`` the bucket holds one token: requests are evenly spaced.
        """
        if isinstance(text, Rate):
            return text
        if isinstance(text, int | float) and not isinstance(text, bool):
            return cls(float(text))
        if not isinstance(text, str):
            raise InvalidRate(f"invalid rate {text!r}: expected {RATE_FORMAT}")
        match = _RATE.match(text)
        unit = None
        if (
            match and match["unit"].lower() != "ms"
        ):  # not "per minute"; milliseconds are no unit here
            name = match["unit"].lower()
            unit = _UNITS.get(name, _UNITS.get(name.removesuffix("s")))
        if not match or unit is None:
            raise InvalidRate(f"invalid rate {text!r}: expected {RATE_FORMAT}")
        count = float(match["n"])
        if count <= 0:
            raise InvalidRate(
                f"invalid rate {text!r}: the count must be above 0 (use 'unlimited' for no limit)"
            )
        burst = int(match["burst"]) if match["burst"] else 1
        if burst < 1:
            raise InvalidRate(f"invalid rate {text!r}: burst must be at least 1")
        return cls(count / unit, burst)

    def __str__(self) -> str:
        for name, seconds in (("s", 1.0), ("min", 60.0), ("h", 3600.0)):
            count = self.per_s * seconds
            if count >= 1 and abs(count - round(count)) < 1e-9:
                base = f"{round(count)}/{name}"
                break
        else:
            base = f"{self.per_s:g}/s"
        return base if self.burst == 1 else f"{base} burst {self.burst}"

    def key(self) -> str:
        return f"{self.per_s!r}:{self.burst}"


RateSpec = str | int | float | Rate | None


def parse_rate_or_unlimited(value: RateSpec) -> Rate | None:
    """A rate, or None for no limit (``unlimited``/``off``/``none``, or nothing given)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in UNLIMITED_WORDS):
        return None
    return Rate.parse(value)


def domain_key(host: str) -> str:
    """A rate map's key as the limiter looks it up: a lower-case bare host, or ``*``."""
    host = host.strip()
    if host == DEFAULT_KEY:
        return DEFAULT_KEY
    domain = normalize_host(host)
    if not domain or re.search(r"[/:@\s?#\\*]", domain):
        raise InvalidRate(
            f"rate limit key {host!r} must be a bare host name such as example.com "
            "(no scheme, port or path), or '*' for the default"
        )
    return domain


def parse_rate_map(value: Mapping[str, RateSpec] | str | None) -> dict[str, str]:
    """Validate ``{"example.com": "2/s", "*": "10/s"}`` or ``"example.com=2/s; *=10/s"``.

    Returns the same map with normalized keys (lower-case hosts) and canonical rate strings,
    every problem reported at once. Used by the settings and by template validation.
    """
    value = read_mapping(
        value, what="rate limits", pair="host=rate", example="example.com=2/s; *=10/s", error=InvalidRate
    )
    out: dict[str, str] = {}
    problems: list[str] = []
    for host, spec in value.items():
        try:
            key = domain_key(str(host))
            rate = parse_rate_or_unlimited(spec)
        except InvalidRate as exc:
            problems.append(str(exc))
            continue
        out[key] = "unlimited" if rate is None else str(rate)
    if problems:
        raise InvalidRate("; ".join(problems))
    return out


# --- tenant caps ---------------------------------------------------------------------------------
def parse_caps(value: Mapping[str, Any] | str | None) -> dict[str, int]:
    """Validate ``{"acme": 2, "*": 5}`` or ``"acme=2; *=5"`` (``*`` = every other tenant)."""
    value = read_mapping(
        value, what="tenant caps", pair="tenant=cap", example="acme=2; *=5",
        error=InvalidTenantCaps, separators=";,\n",
    )
    out: dict[str, int] = {}
    problems: list[str] = []
    for name, cap in value.items():
        name = str(name).strip()
        if name != DEFAULT_KEY and not TENANT_NAME.match(name):
            problems.append(f"tenant name {name!r} must be letters, digits and _ . : @ - (or '*')")
            continue
        try:
            number = (
                int(cap)
                if not isinstance(cap, bool) and str(cap).strip().lstrip("-").isdigit()
                else None
            )
        except (TypeError, ValueError):
            number = None
        if number is None or number < 0:
            problems.append(f"tenant {name!r}: cap must be a whole number >= 0, got {cap!r}")
            continue
        out[name] = number
    if problems:
        raise InvalidTenantCaps("tenant caps: " + "; ".join(problems))
    return out


# --- blockable resource kinds --------------------------------------------------------------------
def validate_block_kinds(kinds: Iterable[object] | str | None) -> frozenset[str]:
    """Check a template's ``block_resources`` list; return it as a set.

    ``["image", "font"]`` → ``{"image", "font"}``; an unknown kind raises :class:`InvalidBlockKind`
    naming every valid kind (and the closest one, for ``images`` or ``css``-style slips).
    """
    if kinds is None:
        return frozenset()
    if isinstance(kinds, str):
        kinds = [kinds]
    out: set[str] = set()
    problems: list[str] = []
    for kind in kinds:
        name = kind.strip().lower() if isinstance(kind, str) else None
        if name in BLOCKABLE:
            out.add(name)
            continue
        hint = ""
        if name is not None:
            close = difflib.get_close_matches(name.rstrip("s"), sorted(BLOCKABLE), n=1, cutoff=0.5)
            if name in ("css", "styles", "style"):
                close = ["stylesheet"]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(f"{kind!r}{hint}")
    if problems:
        raise InvalidBlockKind(
            f"cannot block resource kind(s) {', '.join(problems)}; "
            f"valid kinds: {', '.join(sorted(BLOCKABLE))}"
        )
    return frozenset(out)


__all__ = [
    "BLOCKABLE",
    "DEFAULT_KEY",
    "RATE_FORMAT",
    "TENANT_NAME",
    "UNLIMITED_WORDS",
    "Rate",
    "RateSpec",
    "domain_key",
    "parse_caps",
    "parse_rate_map",
    "parse_rate_or_unlimited",
    "read_mapping",
    "validate_block_kinds",
]
