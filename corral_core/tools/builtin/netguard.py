"""Outbound HTTP for tools an agent drives (fetch_url, http): checked hosts, pinned addresses.

- `check_scheme` / `check_wall`: absolute http(s) URLs only; consent and login walls refused.
- `is_public_address`: globally routable unicast only; IPv6 forms that embed an IPv4 address
  (`::ffff:a.b.c.d`, `::a.b.c.d`, NAT64, 6to4, Teredo) are judged by that IPv4 address too.
- `GuardedHttp`: one tool call's client. Each host is resolved once, its addresses are checked
  (unless private addresses are allowed), and the connection goes only to those addresses: the
  transport's network backend is pinned, so a second, different DNS answer (DNS rebinding) is never
  used. TLS still verifies and sends SNI for the URL's host name, and the Host header is unchanged.
  Redirects are not followed by the client: each tool follows them hop by hop, checking each.
  Environment proxy settings are ignored (a proxy would resolve the host itself).
"""

from __future__ import annotations

import ipaddress
import socket
import typing
from collections.abc import Callable
from urllib.parse import urlsplit

import httpcore
import httpx

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


class PinnedBackend(httpcore.NetworkBackend):
    """An httpcore network backend that connects each host only to the addresses pinned for it."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None) -> None:
        self._inner = inner if inner is not None else httpcore.SyncBackend()
        self._pins: dict[str, list[str]] = {}

    def pin(self, host: str, addresses: list[str]) -> None:
        self._pins[host] = list(addresses)

    def pinned(self, host: str) -> list[str] | None:
        return self._pins.get(host)

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.NetworkStream:
        addresses = self._pins.get(host)
        if not addresses:
            raise httpcore.ConnectError(f"refused to connect to {host}: its address was not checked")
        failure: Exception | None = None
        for address in addresses:  # the checked addresses, in the resolver's order; never a new lookup
            try:
                return self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                               socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None
                            ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("tools never connect to unix sockets")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _default_port(url: httpx.URL) -> int:
    return url.port or (443 if url.scheme == "https" else 80)


def origin(url: httpx.URL) -> tuple[str, str, int]:
    """(scheme, host, port): where a URL's request goes, for same-origin decisions."""
    return url.scheme, url.host, _default_port(url)


class GuardedHttp:
    """One tool call's HTTP client, connecting only to addresses it resolved (and checked) itself.

    `admit(url, check=...)` must be called for every URL before it is requested: it resolves the
    host once per call (later hops to the same host reuse the pinned addresses) and, with
    `check=True`, refuses private addresses. `network_backend` replaces the socket layer in tests.
    """

    def __init__(self, *, timeout: float, resolver: Resolver = system_resolver,
                 headers: dict[str, str] | None = None,
                 network_backend: httpcore.NetworkBackend | None = None) -> None:
        self.resolver = resolver
        self.backend = PinnedBackend(network_backend)
        transport = httpx.HTTPTransport(trust_env=False)
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):  # never fall back to an unpinned client
            raise RuntimeError("this httpx/httpcore version does not let corral-tui pin addresses")
        pool._network_backend = self.backend
        self.client = httpx.Client(transport=transport, timeout=httpx.Timeout(timeout), follow_redirects=False,
                                   trust_env=False, headers=headers)
        self._checked: set[str] = set()

    def admit(self, url: str | httpx.URL, *, check: bool) -> httpx.URL:
        """Parse `url`, resolve and pin its host, and with `check` refuse private addresses."""
        try:
            parsed = httpx.URL(url) if isinstance(url, str) else url
        except (httpx.InvalidURL, ValueError) as exc:
            raise ToolExecutionError(f"Invalid URL {url}: {exc}") from None
        host = parsed.raw_host.decode("ascii")
        addresses = self.backend.pinned(host)
        if addresses is None:
            addresses = resolve(host, _default_port(parsed), self.resolver)
            self.backend.pin(host, addresses)
        if check and host not in self._checked:
            refuse_private(str(parsed), host, addresses)
            self._checked.add(host)
        return parsed

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> GuardedHttp:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
