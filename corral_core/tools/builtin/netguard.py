"""Outbound HTTP for tools an agent drives (fetch_url, http): checked hosts, pinned addresses.

- `check_scheme` / `check_wall`: absolute http(s) URLs only; consent and login walls refused.
- `is_public_address`: globally routable unicast only; IPv6 forms that embed an IPv4 address
  (`::ffff:a.b.c.d`, `::a.b.c.d`, NAT64, 6to4, Teredo) are judged by that IPv4 address too.
- `resolve`, `refuse_private`: one lookup per host, and the refusal of private addresses.

The client that pins the addresses it checked (`GuardedHttp`) is in pinned_http.py: it needs httpx,
which a suite's tools import only when they first make a request, not when the suite loads.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from corral_core.tools.base import ToolExecutionError

ALLOWED_SCHEMES = ("http", "https")
WALL_HOST_PREFIXES = ("consent.", "accounts.", "auth.", "login.", "idp.", "signin.")
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (IPv4 and IPv6), via the system resolver."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def check_scheme(url: str) -> None:
    """Refuse anything but absolute http(s) URLs with a host (file://, ftp://, javascript:, ...)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ALLOWED_SCHEMES:
        shown = f"'{parts.scheme}://'" if parts.scheme else "no scheme"
        raise ToolExecutionError(
            f"Only http:// and https:// URLs can be fetched ({shown} given): {url}"
        )
    if not parts.hostname:
        raise ToolExecutionError(f"URL has no host name: {url}")
    try:
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ToolExecutionError(f"URL has an invalid port: {url}") from None


def wall_host(url: str) -> str | None:
    """The host if `url` points at a consent or login wall (consent.*, accounts.*, ...), else None."""
    host = (urlsplit(url).hostname or "").lower()
    return host if host.startswith(WALL_HOST_PREFIXES) else None


def check_wall(url: str) -> None:
    """Fail with advice when `url` is a consent/login wall: the page would be a cookie form, not content."""
    host = wall_host(url)
    if host:
        raise ToolExecutionError(
            f"{url} is a consent or login wall ({host}), not the page's content; try a different result URL."
        )


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in _IPV4_COMPATIBLE or ip in _NAT64:  # ::a.b.c.d and 64:ff9b::a.b.c.d
        found.append(ipaddress.IPv4Address(ip.packed[12:]))
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def is_public_address(address: str) -> bool:
    """True for globally routable unicast addresses; an IPv6 address embedding an IPv4 one is public
    only if that IPv4 address is too (`[::127.0.0.1]` is loopback in disguise)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        candidates += _embedded_ipv4(ip)
    return all(c.is_global and not c.is_multicast for c in candidates)


def resolve(host: str, port: int, resolver: Resolver = system_resolver) -> list[str]:
    """The addresses of `host` (an IP literal is its own answer); failures in words."""
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    try:
        addresses = resolver(host, port)
    except (OSError, UnicodeError) as exc:
        raise ToolExecutionError(f"Could not resolve host '{host}': {exc}") from None
    if not addresses:
        raise ToolExecutionError(f"Host '{host}' has no addresses.")
    return list(addresses)


def refuse_private(url: str, host: str, addresses: list[str]) -> None:
    """Fail unless every address of `host` is public."""
    blocked = [address for address in addresses if not is_public_address(address)]
    if blocked:
        raise ToolExecutionError(
            f"Refused to fetch {url}: host '{host}' is a private, loopback or link-local address "
            f"({', '.join(blocked)}); only public web pages can be fetched."
        )


def check_public_host(url: str, resolver: Resolver = system_resolver) -> None:
    """Refuse URLs whose host is, or resolves to, a private, loopback, link-local or reserved address."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    refuse_private(url, host, resolve(host, port, resolver))
