"""Bearer-token auth (a pure ASGI middleware) and the loopback rule for binding.

The server binds 127.0.0.1 by default; binding anywhere else requires a token, because tools can
read and write files and run programs on the server's machine.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["PUBLIC_PATHS", "BearerAuthMiddleware", "is_loopback_host"]

PUBLIC_PATHS = frozenset({"/health"})


def is_loopback_host(host: str) -> bool:
    """True for hosts only reachable from this machine (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuthMiddleware:
    """Rejects every request but `PUBLIC_PATHS` without `Authorization: Bearer <token>` (401)."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        supplied = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                supplied = value
                break
        scheme, _, credentials = supplied.partition(b" ")
        # The scheme is case-insensitive (RFC 9110); the token is compared in constant time.
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self.expected):
            await self.app(scope, receive, send)
            return
        detail = (
            "Missing or wrong bearer token: send the header 'Authorization: Bearer <token>' "
            "with the token the server was started with."
        )
        await _send_json(send, 401, {"detail": detail}, [(b"www-authenticate", b"Bearer")])


async def _send_json(
    send: Send, status: int, payload: Any, extra_headers: list[tuple[bytes, bytes]]
) -> None:
    body = json.dumps(payload).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra_headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
