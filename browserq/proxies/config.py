"""Proxy configuration: parsing ``BROWSERQ_PROXIES`` / ``BROWSERQ_PROXIES_FILE`` into :class:`Proxy`.

A proxy is a URL: ``scheme://[user[:password]@]host[:port][#region=xx]`` with scheme ``http``,
``https`` or ``socks5``. Special characters in credentials must be percent-encoded (``/`` as
``%2F``, ``@`` as ``%40``, ``,`` as ``%2C``). A proxy's ``id`` is a short hash of
``scheme://host:port`` only, so rotating its password (or its region hint) keeps its health history.

Passwords never appear in a label, a repr, a log line or an error message.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from browserq.errors import ConfigError
from browserq.redact import redact_url

SCHEMES = ("http", "https", "socks5")
DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080}
STRATEGIES = ("round_robin", "random", "least_used", "sticky_domain", "sticky_identity")
_REGION = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_HOST = re.compile(r"^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$")
_ENCODE_HINT = (
    "percent-encode special characters in credentials (/ as %2F, @ as %40, : as %3A, , as %2C)"
)


@dataclass(frozen=True, slots=True)
class Proxy:
    """One configured proxy. ``password`` is kept out of ``repr``, ``str`` and ``label``."""

    id: str
    scheme: str
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    region: str | None = None

    @property
    def server(self) -> str:
        """``scheme://host:port`` — Playwright's ``proxy.server``; no credentials."""
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def label(self) -> str:
        """A printable name: ``http://user:***@host:3128`` (the password is never shown)."""
        if self.username is None:
            return self.server
        secret = ":***" if self.password is not None else ""
        return f"{self.scheme}://{self.username}{secret}@{self.host}:{self.port}"

    def playwright_options(self) -> dict[str, str]:
        """The ``proxy=`` option of ``browser.new_context``."""
        options = {"server": self.server}
        if self.username is not None:
            options["username"] = self.username
            options["password"] = self.password or ""
        return options

    def __repr__(self) -> str:
        region = f", region={self.region!r}" if self.region else ""
        return f"Proxy(id={self.id!r}, {self.label}{region})"

    def __str__(self) -> str:
        return self.label


def proxy_id(scheme: str, host: str, port: int) -> str:
    """Stable short id of a proxy: the same in every process and across password changes."""
    return hashlib.sha256(f"{scheme}://{host.lower()}:{port}".encode()).hexdigest()[:12]


def redact_proxy_setting(value: str | Sequence[str] | None) -> str:
    """The ``proxies`` setting fit for display (``browserq settings``): every password masked."""
    if not value:
        return "[]"
    items = [value] if isinstance(value, str) else list(value)
    return ", ".join(redact_url(item) for item in items)


def parse_proxy(url: str, where: str = "proxy") -> Proxy:
    """Parse one proxy URL; ``where`` names it in errors (``BROWSERQ_PROXIES[2]``, ``file:7``)."""
    text = url.strip()
    shown = redact_url(text)

    def bad(reason: str) -> ConfigError:
        return ConfigError(f"{where}: {shown!r} is not a valid proxy URL: {reason}")

    if not text:
        raise bad("empty")
    if any(ch.isspace() for ch in text):
        raise bad("contains whitespace")
    if "://" not in text:
        raise bad(
            f"missing scheme; write e.g. http://host:3128 (schemes: {', '.join(SCHEMES)}); "
            "a , inside a password must be written %2C"
        )
    try:
        parts = urlsplit(text)
    except ValueError:
        raise bad(f"cannot be parsed; {_ENCODE_HINT}") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise bad(f"unsupported scheme {scheme!r}; use one of {', '.join(SCHEMES)}")
    if parts.path not in ("", "/") or parts.query:
        raise bad(f"a proxy URL has no path or query; {_ENCODE_HINT}")
    hostinfo = parts.netloc.rpartition("@")[2]
    host, port_text = hostinfo, ""
    if hostinfo.startswith("["):
        end = hostinfo.find("]")
        host, port_text = hostinfo[: end + 1], hostinfo[end + 1 :].removeprefix(":")
    elif ":" in hostinfo:
        host, _, port_text = hostinfo.rpartition(":")
    if not host or not _HOST.match(host):
        raise bad(f"missing or invalid host; {_ENCODE_HINT}")
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise bad(f"port must be a number from 1 to 65535; {_ENCODE_HINT}")
        port = int(port_text)
    else:
        port = DEFAULT_PORTS[scheme]
    username = password = None
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        raw_user, colon, raw_password = userinfo.partition(":")
        username = unquote(raw_user)
        password = unquote(raw_password) if colon else None
        if not username:
            raise bad("credentials without a user name")
    if scheme == "socks5" and username is not None:
        raise bad(
            "Chromium does not support SOCKS5 proxy authentication; use an http(s) proxy for "
            "credentials or an unauthenticated socks5 proxy"
        )
    region = None
    if parts.fragment:
        for item in parts.fragment.split("&"):
            key, eq, value = item.partition("=")
            if key != "region" or not eq:
                raise bad("the only fragment option is #region=<code>")
            if not _REGION.match(value):
                raise bad("region must be letters, digits, - or _ (e.g. #region=de)")
            region = value.lower()
    return Proxy(
        id=proxy_id(scheme, host, port),
        scheme=scheme,
        host=host.lower(),
        port=port,
        username=username,
        password=password,
        region=region,
    )


def split_proxy_setting(value: str | Sequence[str] | None) -> list[str]:
    """``BROWSERQ_PROXIES`` as a list of entries: a JSON list, or comma/newline-separated text."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                decoded = json.loads(text)
            except ValueError:
                raise ConfigError(
                    "BROWSERQ_PROXIES: starts with '[' but is not a valid JSON list"
                ) from None
            if not isinstance(decoded, list) or not all(isinstance(i, str) for i in decoded):
                raise ConfigError("BROWSERQ_PROXIES: the JSON value must be a list of URL strings")
            return [item.strip() for item in decoded if item.strip()]
        return [item.strip() for item in re.split(r"[,\n]", text) if item.strip()]
    return [str(item).strip() for item in value if str(item).strip()]


def read_proxies_file(path: Path) -> list[tuple[str, str]]:
    """``(where, url)`` pairs of a proxies file: one URL per line, blank lines and ``#`` comments
    skipped (a ``#`` after whitespace starts a comment; ``#region=`` inside a URL does not)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ConfigError(
            f"BROWSERQ_PROXIES_FILE={str(path)!r} cannot be read: {exc.strerror}"
        ) from None
    entries = []
    for number, line in enumerate(lines, start=1):
        tokens = line.split(None, 1)
        if not tokens or tokens[0].startswith("#"):
            continue
        where = f"{path}:{number}"
        if len(tokens) > 1 and not tokens[1].startswith("#"):
            raise ConfigError(
                f"{where}: {redact_url(tokens[0])!r}: one URL per line (start a comment with #)"
            )
        entries.append((where, tokens[0]))
    return entries


def parse_proxies(entries: Iterable[tuple[str, str]]) -> list[Proxy]:
    """Parse ``(where, url)`` pairs; an exact duplicate is dropped, the same server with different
    credentials is an error (their health would be shared under one id)."""
    seen: dict[str, tuple[str, Proxy]] = {}
    proxies: list[Proxy] = []
    for where, url in entries:
        proxy = parse_proxy(url, where)
        if proxy.id in seen:
            first_where, first = seen[proxy.id]
            if (first.username, first.password) != (proxy.username, proxy.password):
                raise ConfigError(
                    f"{where}: {proxy.server} is already configured at {first_where} with other "
                    "credentials; each proxy server may appear once"
                )
            continue
        seen[proxy.id] = (where, proxy)
        proxies.append(proxy)
    return proxies


@dataclass(frozen=True)
class ProxyConfig:
    """Everything the proxy layer needs, validated once."""

    proxies: tuple[Proxy, ...] = ()
    strategy: str = "round_robin"
    cooldown_s: float = 30.0
    cooldown_max_s: float = 900.0
    redis_url: str = "redis://127.0.0.1:6379/0"
    sticky_ttl_s: float = 86400.0

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConfigError(
                f"BROWSERQ_PROXY_STRATEGY={self.strategy!r}: use one of {', '.join(STRATEGIES)}"
            )
        if self.cooldown_s <= 0 or self.cooldown_max_s < self.cooldown_s:
            raise ConfigError(
                f"BROWSERQ_PROXY_COOLDOWN_MAX_S ({self.cooldown_max_s}) must be at least "
                f"BROWSERQ_PROXY_COOLDOWN_S ({self.cooldown_s}), which must be positive"
            )

    @classmethod
    def from_settings(cls, settings: Any) -> ProxyConfig:
        entries = [
            (f"BROWSERQ_PROXIES[{i}]", url)
            for i, url in enumerate(split_proxy_setting(settings.proxies))
        ]
        if settings.proxies_file is not None:
            entries += read_proxies_file(settings.proxies_file)
        return cls(
            proxies=tuple(parse_proxies(entries)),
            strategy=settings.proxy_strategy,
            cooldown_s=settings.proxy_cooldown_s,
            cooldown_max_s=settings.proxy_cooldown_max_s,
            redis_url=proxy_redis_url(settings),
            sticky_ttl_s=settings.proxy_sticky_ttl_s,
        )


def load_proxies(settings: Any) -> list[Proxy]:
    """The proxies configured in ``settings`` (``BROWSERQ_PROXIES`` first, then the file)."""
    return list(ProxyConfig.from_settings(settings).proxies)


def proxy_redis_url(settings: Any) -> str:
    """``BROWSERQ_PROXY_REDIS_URL``, else the broker when it is Redis, else local Redis DB 0."""
    return str(settings.shared_redis_url(settings.proxy_redis_url))
