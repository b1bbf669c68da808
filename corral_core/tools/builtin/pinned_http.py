"""One tool call's HTTP client (fetch_url, http), connecting only to the addresses it checked.

`GuardedHttp`: each host is resolved once, its addresses are checked (unless private addresses are
allowed), and the connection goes only to those addresses: the transport's network backend is
pinned, so a second, different DNS answer (DNS rebinding) is never used. TLS still verifies and
sends SNI for the URL's host name, and the Host header is unchanged. Redirects are not followed by
the client: each tool follows them hop by hop, checking each. Environment proxy settings are
ignored (a proxy would resolve the host itself). The checks themselves are in netguard.py.
"""

from __future__ import annotations

import typing

import httpcore
import httpx

from corral_core.tools.base import ToolExecutionError
from corral_core.tools.builtin.netguard import Resolver, refuse_private, resolve, system_resolver


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
