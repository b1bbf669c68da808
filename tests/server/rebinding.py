"""What a DNS-rebinding page (or another local web page) can send to a local server, and what it must get.

`attack(url, task_id, tool, arguments)` sends the requests a page at `attacker.example`, rebound to
127.0.0.1, can make: list and decide approvals, execute a tool over REST, list and call tools over
MCP, read /health; each once with a foreign Host (and its matching Origin) and once with our own
Host but a foreign Origin. It returns every status code, keyed by (case, route).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from tests.timeouts import HTTP_TIMEOUT

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def attack(url: str, task_id: str, tool: str, arguments: dict[str, object]) -> dict[tuple[str, str], int]:
    port = urlsplit(url).port
    cases = {
        "foreign host": {"Host": f"rebind.attacker.example:{port}"},
        "foreign host and origin": {"Host": f"rebind.attacker.example:{port}",
                                    "Origin": f"http://rebind.attacker.example:{port}"},
        "our host, foreign origin": {"Host": f"127.0.0.1:{port}", "Origin": "http://attacker.example"},
        "our host, another local page": {"Host": f"127.0.0.1:{port}", "Origin": "http://127.0.0.1:1"},
        "our host, opaque origin": {"Host": f"127.0.0.1:{port}", "Origin": "null"},
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    seen: dict[tuple[str, str], int] = {}
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
        for case, headers in cases.items():
            requests = {
                "GET /health": lambda h=headers: http.get("/health", headers=h),
                "GET /approvals": lambda h=headers: http.get("/approvals", headers=h),
                "POST /approvals/{id}": lambda h=headers: http.post("/approvals/ap_0123456789ab",
                                                                    json={"approved": True}, headers=h),
                "POST tools/execute": lambda h=headers: http.post(
                    f"/tasks/{task_id}/tools/execute", json={"tool_name": tool, "arguments": arguments}, headers=h),
                "POST mcp tools/list": lambda h=headers: http.post(f"/tasks/{task_id}/mcp", json=listing,
                                                                   headers={**MCP_HEADERS, **h}),
                "POST mcp tools/call": lambda h=headers: http.post(f"/tasks/{task_id}/mcp", json=call,
                                                                   headers={**MCP_HEADERS, **h}),
                "GET mcp stream": lambda h=headers: http.get(f"/tasks/{task_id}/mcp",
                                                             headers={"Accept": "text/event-stream", **h}),
            }
            for route, send in requests.items():
                seen[(case, route)] = send().status_code
    return seen


def expected_refusals(seen: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """421 for every foreign Host, 403 for every foreign Origin under our own Host."""
    return {key: 421 if key[0].startswith("foreign host") else 403 for key in seen}
