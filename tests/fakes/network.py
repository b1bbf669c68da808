"""A socket layer for URL-tool tests that never leaves this machine.

`LoopbackBackend` is an httpcore network backend: connections to loopback go through; an address
listed in `stand_ins` (a "public" address a test resolver handed out) is served by 127.0.0.1
instead; any other address is refused. Every address asked for is recorded in `connected_to`.
"""

from __future__ import annotations

import ipaddress
import typing

import httpcore


class LoopbackBackend(httpcore.NetworkBackend):
    def __init__(self, stand_ins: typing.Iterable[str] = ()) -> None:
        self.stand_ins = set(stand_ins)
        self.connected_to: list[str] = []
        self.inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.NetworkStream:
        self.connected_to.append(host)
        if host in self.stand_ins:
            host = "127.0.0.1"
        elif not ipaddress.ip_address(host).is_loopback:
            raise httpcore.ConnectError(f"test network: {host} is not reachable from tests")
        return self.inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                      socket_options=socket_options)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None
                            ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("no unix sockets in tests")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)
