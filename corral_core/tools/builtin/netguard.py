"""URL checks for tools that fetch pages an agent chose: scheme, walls, private addresses."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from corral_core.tools.base import ToolExecutionError

ALLOWED_SCHEMES = ("http", "https")
WALL_HOST_PREFIXES = ("consent.", "accounts.", "auth.", "login.", "idp.", "signin.")

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


def is_public_address(address: str) -> bool:
    """True for globally routable unicast addresses; IPv4-mapped IPv6 is judged by its IPv4 part."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_public_host(url: str, resolver: Resolver = system_resolver) -> None:
    """Refuse URLs whose host is, or resolves to, a private, loopback, link-local or reserved address."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            addresses = resolver(host, port)
        except (OSError, UnicodeError) as exc:
            raise ToolExecutionError(f"Could not resolve host '{host}': {exc}") from None
    if not addresses:
        raise ToolExecutionError(f"Host '{host}' has no addresses.")
    blocked = [address for address in addresses if not is_public_address(address)]
    if blocked:
        raise ToolExecutionError(
            f"Refused to fetch {url}: host '{host}' is a private, loopback or link-local address "
            f"({', '.join(blocked)}); only public web pages can be fetched."
        )
