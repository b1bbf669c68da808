"""Who may talk to a server: the Host and Origin checks that stop DNS rebinding (a pure ASGI middleware).

A web page the operator has open can rebind its own name to 127.0.0.1 and then send requests to a
local server; the browser then sends `Host: attacker.example` (and, on a POST or a fetch, `Origin:
http://attacker.example`). So every route of every server we start answers only the hosts it was
bound for:

- a loopback name or address (`localhost`, 127.0.0.0/8, ::1): the request came from this machine
  and named it as such, which a rebinding page cannot do;
- the address the connection arrived on, and the address the server was bound to;
- when bound wider than loopback (`--host 0.0.0.0`, a LAN address): this machine's names
  (`socket.gethostname()`, `socket.getfqdn()`);
- the names given with `allowed_hosts` (`corral-tui serve --allowed-host NAME[:PORT]`), for a
  reverse proxy that forwards its own Host.

Any other Host is answered 421 (Misdirected Request). A request carrying an `Origin` (browsers
send it on every POST and every cross-origin fetch) must come from one of those hosts *on this
server's port* (or an `allowed_hosts` entry, on the port it names or any): anything else, `null`
included, is 403, so neither a rebinding page nor another local web page can act. Clients that are
not browsers (the runner, curl, MCP clients) send no Origin and are unaffected.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HostGuardMiddleware", "HostPolicy", "split_host"]

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def split_host(value: str) -> tuple[str, int | None]:
    """`host[:port]` (IPv6 in brackets) -> (lower-case host without brackets, port or None).

    Raises ValueError for something that is not a host (a bad port, an unclosed bracket).
    """
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            raise ValueError(f"unclosed bracket in {value!r}")
        host, rest = value[1:end], value[end + 1:]
        if rest and not rest.startswith(":"):
            raise ValueError(f"junk after the address in {value!r}")
        port_text = rest[1:]
    elif value.count(":") == 1:
        host, port_text = value.split(":")
    else:  # a bare name, an IPv4 address, or an unbracketed IPv6 address (no port then)
        host, port_text = value, ""
    if port_text == "":
        return host.rstrip("."), None
    if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        raise ValueError(f"bad port in {value!r}")
    return host.rstrip("."), int(port_text)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _same_address(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return False


@lru_cache(maxsize=1)
def machine_names() -> frozenset[str]:
    """This machine's names, as a client on the network would type them."""
    names: set[str] = set()
    for name in (socket.gethostname(), socket.getfqdn()):
        name = name.strip().lower().rstrip(".")
        if name:
            names.add(name)
            names.add(name.split(".", 1)[0])
    return frozenset(names)


class HostPolicy:
    """The hosts one server answers. `bind()` tells it where the server listens (EmbeddedServer and
    `corral-tui serve` call it); before that, only loopback names and the arriving address pass."""

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        self.extra: dict[str, int | None] = {}
        for entry in allowed_hosts:
            host, port = split_host(entry)
            if not host:
                raise ValueError(f"empty host in allowed host {entry!r}")
            self.extra[host] = port
        self.bound_host: str | None = None
        self.port: int | None = None
        self.wide = False

    def bind(self, host: str, port: int) -> None:
        """The server listens on `host:port` (a wildcard or non-loopback host makes it `wide`)."""
        self.bound_host = host.strip("[]").lower()
        self.port = port
        self.wide = self.bound_host in WILDCARDS or not _is_loopback(self.bound_host)

    def host_allowed(self, host: str, local_address: str | None) -> bool:
        """Whether a request whose Host names `host` (no port), arriving on `local_address`, is for us."""
        if _is_loopback(host) or host in self.extra:
            return True
        if local_address and _same_address(host, local_address.lower()):
            return True
        if self.bound_host and self.bound_host not in WILDCARDS and _same_address(host, self.bound_host):
            return True
        return self.wide and host in machine_names()

    def origin_allowed(self, origin: str, local_address: str | None, local_port: int | None) -> bool:
        """Whether a browser page at `origin` is one of ours: an allowed host on this server's port."""
        try:
            parts = urlsplit(origin.strip())
            host, port = split_host(parts.netloc)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not host:
            return False
        if port is None:
            port = 443 if parts.scheme == "https" else 80
        if host in self.extra:
            wanted = self.extra[host]
            return wanted is None or wanted == port
        ours = self.port or local_port
        return port == ours and self.host_allowed(host, local_address)


class HostGuardMiddleware:
    """421 for a foreign Host, 403 for a browser Origin that is not ours, on every route."""

    def __init__(self, app: ASGIApp, *, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host_header = origin = None
        for name, value in scope["headers"]:
            if name == b"host":
                host_header = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1")
        server = scope.get("server") or (None, None)
        local_address, local_port = server[0], server[1]
        if host_header is not None:
            try:
                host, _ = split_host(host_header)
            except ValueError:
                host = ""
            if not host or not self.policy.host_allowed(host, local_address):
                await _refuse(send, 421, f"Misdirected request: this server does not answer for host "
                                         f"{host_header[:100]!r}. A proxy in front of it must be named with "
                                         "`corral-tui serve --allowed-host NAME`.")
                return
        if origin is not None and not self.policy.origin_allowed(origin, local_address, local_port):
            await _refuse(send, 403, f"Forbidden: requests from web pages at {origin[:100]!r} are refused "
                                     "(a page in a browser must not act on this server).")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
