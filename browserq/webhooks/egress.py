"""Where a webhook may go: the egress policy of notify URLs.

A notify URL is chosen by whoever enqueues a run, and a worker POSTs to it from inside the
fleet's network, so by default it may only reach the public internet: loopback, link-local (the
cloud metadata service at 169.254.169.254), private (RFC 1918, fc00::/7), shared (CGNAT
100.64.0.0/10), unspecified, multicast and reserved addresses are refused, however spelt (an
IPv4 address inside an IPv6 one is judged as the IPv4 address). Operators who run an internal
receiver name it in ``BROWSERQ_WEBHOOK_ALLOWED_HOSTS`` (host names, ``*.suffix``) or
``BROWSERQ_WEBHOOK_ALLOWED_NETWORKS`` (CIDRs).

Checked twice: :func:`url_problem` at the producer (what the URL itself says: a literal address,
``localhost``, port 0, a numeric host in an odd spelling, a non-ASCII host), and
:meth:`EgressPolicy.addresses` at send time on every address the host name resolves to — the
POST then connects to one of those checked addresses, so DNS cannot route around the check.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator
from pydantic_settings import NoDecode

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: NAT64 (RFC 6052): the IPv4 address is the last 32 bits.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_HOST_NAME = re.compile(r"[a-z0-9_.-]+")
ALLOW_HINT = "BROWSERQ_WEBHOOK_ALLOWED_HOSTS or BROWSERQ_WEBHOOK_ALLOWED_NETWORKS"


class EgressRefused(ValueError):
    """The notify URL's host or an address it resolves to is outside the egress policy."""


def split_list(value: Any) -> Any:
    """A comma- or newline-separated string as a list (a list stays a list)."""
    if isinstance(value, str):
        return [item.strip() for item in value.replace("\n", ",").split(",") if item.strip()]
    return value


def host_pattern_problem(pattern: str) -> str | None:
    """What is wrong with one ``BROWSERQ_WEBHOOK_ALLOWED_HOSTS`` entry (None: nothing)."""
    name = pattern.removeprefix("*.")
    if not name or not name.isascii() or any(c.isspace() or c in "/:@*" for c in name):
        return f"allowed webhook host {pattern!r} must be a host name or *.domain (no scheme, port or path)"
    return None


def parse_networks(value: Iterable[str]) -> tuple[Network, ...]:
    """``BROWSERQ_WEBHOOK_ALLOWED_NETWORKS`` entries as networks (ValueError names a bad one)."""
    networks = []
    for item in value:
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(
                f"allowed webhook network {item!r} is not an address or CIDR, e.g. 10.0.0.0/8"
            ) from None
    return tuple(networks)


def _host_patterns(value: tuple[str, ...]) -> tuple[str, ...]:
    if problems := [p for p in map(host_pattern_problem, value) if p]:
        raise ValueError("; ".join(problems))
    return value


def _networks(value: tuple[str, ...]) -> tuple[str, ...]:
    parse_networks(value)
    return value


#: The settings' types of ``BROWSERQ_WEBHOOK_ALLOWED_HOSTS`` / ``_NETWORKS`` (comma-separated or a list).
AllowedHosts = Annotated[
    tuple[str, ...], NoDecode, BeforeValidator(split_list), AfterValidator(_host_patterns)
]
AllowedNetworks = Annotated[
    tuple[str, ...], NoDecode, BeforeValidator(split_list), AfterValidator(_networks)
]


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo's client, NAT64), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _kind(ip: IPAddress) -> str | None:
    """Why ``ip`` is no public address (None: it is one)."""
    for name in ("unspecified", "multicast", "loopback", "link_local"):
        if getattr(ip, f"is_{name}"):
            return name.replace("_", "-")
    if isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED:
        return "shared (CGNAT)"
    if ip.is_reserved:
        return "reserved"
    if ip.is_private:
        return "private"
    if not ip.is_global:
        return "reserved"
    return None


@dataclass(frozen=True)
class EgressPolicy:
    """The hosts and networks a webhook may reach besides the public internet."""

    allowed_hosts: tuple[str, ...] = ()
    allowed_networks: tuple[Network, ...] = ()

    @classmethod
    def from_settings(cls, settings: Any) -> EgressPolicy:
        return cls(
            tuple(h.lower().rstrip(".") for h in settings.webhook_allowed_hosts),
            parse_networks(settings.webhook_allowed_networks),
        )

    def host_allowed(self, host: str) -> bool:
        """An operator named this host: any address it resolves to is theirs to choose."""
        host = host.lower().rstrip(".")
        return any(
            host == p or (p.startswith("*.") and host.endswith(p[1:])) for p in self.allowed_hosts
        )

    def address_problem(self, ip: IPAddress) -> str | None:
        """Why a POST may not connect to ``ip`` (None: it may)."""
        inner = _embedded_ipv4(ip)
        judged = [ip] if inner is None else [ip, inner]
        if any(a.is_unspecified or a.is_multicast for a in judged):
            kind = "an unspecified" if any(a.is_unspecified for a in judged) else "a multicast"
            return f"{ip} is {kind} address: no receiver can be there"
        if any(
            a in net for a in judged for net in self.allowed_networks if a.version == net.version
        ):
            return None
        if category := _kind(judged[-1]):  # a carried IPv4 address is judged as itself
            shown = str(ip) if inner is None else f"{ip} (that is {inner})"
            return f"{shown} is a {category} address; to allow an internal receiver set {ALLOW_HINT}"
        return None

    def url_problem(self, host: str, port: int | None) -> str | None:
        """What the URL's own host and port say, before any lookup (the producer's check)."""
        if port == 0:
            return "notify must not use port 0"
        if not host.isascii():
            try:
                spelt = host.encode("idna").decode()
            except UnicodeError:
                spelt = "its xn-- (IDNA) form"
            return (
                f"notify host {host!r} is not ASCII: write it as {spelt}, so the host shown is the "
                "host resolved (a look-alike letter cannot hide)"
            )
        if self.host_allowed(host):
            return None
        name = host.lower().rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            return f"notify host {host!r} is this machine (loopback); to allow an internal receiver set {ALLOW_HINT}"
        try:
            ip = ipaddress.ip_address(name if ":" not in name else host)
        except ValueError:
            if not _HOST_NAME.fullmatch(name):
                return f"notify host {host!r} is not a host name (letters, digits, - _ . only)"
            return _numeric_spelling_problem(name)
        problem = self.address_problem(ip)
        return None if problem is None else f"notify host {problem}"

    def addresses(self, host: str, port: int) -> list[tuple[int, tuple[Any, ...]]]:
        """``(family, sockaddr)`` of every address ``host`` resolves to, each checked (the send
        time check); raises :class:`EgressRefused` if any is refused, OSError if none resolve."""
        if problem := self.url_problem(host, port):
            raise EgressRefused(problem)
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        found: list[tuple[int, tuple[Any, ...]]] = [(family, sockaddr) for family, _type, _proto, _name, sockaddr in infos]
        if not self.host_allowed(host):
            for _family, sockaddr in found:
                ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
                if problem := self.address_problem(ip):
                    raise EgressRefused(
                        f"{host} resolves to an address webhooks may not reach: {problem}"
                    )
        return found


def _numeric_spelling_problem(host: str) -> str | None:
    """A host that the C library reads as an IPv4 address though it is not one in dotted
    decimal (``0x7f000001``, ``2130706433``, ``0177.0.0.1``, ``127.1``): refused, it hides its address."""
    try:
        socket.inet_aton(host)
    except OSError:
        return None
    return f"notify host {host!r} is an IPv4 address in an unusual spelling: write it as four decimal numbers"


__all__ = [
    "ALLOW_HINT",
    "AllowedHosts",
    "AllowedNetworks",
    "EgressPolicy",
    "EgressRefused",
    "host_pattern_problem",
    "parse_networks",
    "split_list",
]
