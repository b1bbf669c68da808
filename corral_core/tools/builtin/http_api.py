"""http tools: a declared REST call with {param} URL placeholders, env-substituted headers, typed args.

The URL is declared by the suite author, so its host is not subject to fetch_url's private-address
rule (local test APIs must work). Agent-supplied values only ever fill URL-quoted placeholders (dots
encoded too, so `.` and `..` cannot climb the path), the query string or the JSON body. Redirects
are followed hop by hop: a hop to another origin is checked for private addresses (unless the suite
allows them) and never gets the declared headers (an API key stays with its host). Every
connection goes to the address resolved for it (pinned_http.GuardedHttp).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from corral_core.safetext import register_secret
from corral_core.tools.base import Tool, ToolExecutionError
from corral_core.tools.builtin.netguard import ALLOWED_SCHEMES, MAX_REDIRECTS, REDIRECT_CODES, Resolver, system_resolver
from corral_core.tools.builtin.params import ToolDeclarationError, schema_from_parameters, truncate

if TYPE_CHECKING:  # httpx is imported at the first call, not when a suite declaring the tool loads
    import httpcore
    import httpx

HTTP_METHODS = ("GET", "POST", "PUT", "DELETE")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_CHARS = 4000
DEFAULT_MAX_BYTES = 1_000_000
ERROR_SNIPPET_CHARS = 300
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_REFERENCE = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand_env(value: str, environ: Mapping[str, str], *, where: str) -> str:
    """Replace $VAR and ${VAR} with environment values ($$ is a literal $); a missing variable fails."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        variable = match.group(1) or match.group(2)
        if variable not in environ:
            raise ToolExecutionError(
                f"{where} uses ${variable}, which is not set in the environment; "
                f"export {variable} before starting corral-tui."
            )
        return environ[variable]

    expanded = _ENV_REFERENCE.sub(substitute, value)
    if expanded != value:  # a header value read from the environment is a secret: never write it out
        register_secret(expanded)
    return expanded


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def path_value(value: Any) -> str:
    """A placeholder's value as one opaque piece of the path: '/', '?', '#' and '.' are all encoded."""
    return quote(_as_text(value), safe="").replace(".", "%2E")


def _query_value(value: Any) -> str | list[str]:
    if isinstance(value, (list, tuple)):
        return [_as_text(item) for item in value]
    return _as_text(value)


def _read_capped(response: httpx.Response, max_bytes: int, deadline: float) -> str:
    """The body as text, at most `max_bytes` of it; a body still trickling in at `deadline` times out."""
    import httpx

    data = bytearray()
    for chunk in response.iter_bytes():
        data.extend(chunk[: max_bytes - len(data)])
        if len(data) >= max_bytes:
            break
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("the response body did not finish in time")
    return bytes(data).decode(response.charset_encoding or "utf-8", errors="replace")


def http_tool(
    name: str,
    url: str,
    *,
    description: str = "",
    method: str = "GET",
    headers: Mapping[str, Any] | None = None,
    parameters: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_bytes: int = DEFAULT_MAX_BYTES,
    risk: str = "safe",
    render: str = "text",
    environ: Mapping[str, str] | None = None,
    allow_private: bool = False,
    resolver: Resolver | None = None,
    network_backend: httpcore.NetworkBackend | None = None,
) -> Tool:
    """A Tool that calls one REST endpoint; `parameters` is the YAML list form or a JSON-schema object.

    URL placeholders take their parameter's value (URL-quoted); the other arguments go to the query
    string (GET, DELETE) or the JSON body (POST, PUT). Header values may use $VAR / ${VAR}, read at
    call time from `environ` (default: os.environ). `allow_private` lets redirects to other hosts
    reach private addresses; `resolver` and `network_backend` are for tests.
    """
    verb = str(method).upper()
    if verb not in HTTP_METHODS:
        raise ToolDeclarationError(
            f"unsupported method {method!r}.", tool=name, key="method", fix=f"use one of: {', '.join(HTTP_METHODS)}."
        )
    if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
        raise ToolDeclarationError(
            f"url must start with http:// or https://, got {url!r}.",
            tool=name,
            key="url",
            fix="give the full endpoint, e.g. https://api.example.org/v1/{city}.",
        )
    if timeout <= 0 or max_chars <= 0 or max_bytes <= 0:
        raise ToolDeclarationError(
            "timeout, max_chars and max_bytes must be positive.", tool=name, key="timeout", fix="use positive numbers."
        )
    if headers is not None and not isinstance(headers, Mapping):
        raise ToolDeclarationError(
            "headers must be a mapping of header name to value.",
            tool=name,
            key="headers",
            fix="write headers as 'Authorization: Bearer $API_KEY' entries.",
        )
    schema = schema_from_parameters(parameters, tool=name)
    properties: dict[str, Any] = schema["properties"]
    placeholders = list(dict.fromkeys(PLACEHOLDER.findall(url)))
    undeclared = [p for p in placeholders if p not in properties]
    if undeclared:
        raise ToolDeclarationError(
            f"URL placeholder(s) {', '.join('{' + p + '}' for p in undeclared)} have no declared parameter.",
            tool=name,
            key="url",
            fix="declare each placeholder under parameters (type string, required).",
        )
    header_templates = {str(k): str(v) for k, v in (headers or {}).items()}
    env = os.environ if environ is None else environ
    defaults = {key: prop["default"] for key, prop in properties.items() if "default" in prop}

    def call_endpoint(**arguments: Any) -> str:
        import httpx

        values = {**defaults, **{k: v for k, v in arguments.items() if v is not None}}
        for placeholder in placeholders:
            if placeholder not in values:
                raise ToolExecutionError(f"Missing value for '{placeholder}', which the URL needs.")
        target = PLACEHOLDER.sub(lambda m: path_value(values[m.group(1)]) if m.group(1) in values else m.group(0),
                                 url)
        rest = {key: value for key, value in values.items() if key not in placeholders}
        request_headers = {
            key: expand_env(value, env, where=f"Header '{key}' of tool '{name}'")
            for key, value in header_templates.items()
        }
        shown = f"{verb} {target}"
        try:
            request_url = httpx.URL(target)
        except (httpx.InvalidURL, ValueError) as exc:
            raise ToolExecutionError(f"Invalid URL after filling in the arguments: {shown}: {exc}") from None
        body: dict[str, Any] | None = None
        if verb in ("GET", "DELETE"):
            if rest:
                request_url = request_url.copy_merge_params({k: _query_value(v) for k, v in rest.items()})
        else:
            body = rest
        deadline = time.monotonic() + timeout
        try:
            status, reason, text = _send(request_url, verb, request_headers, body, deadline)
        except httpx.TimeoutException:
            raise ToolExecutionError(f"Request timed out after {timeout:g}s: {shown}") from None
        except httpx.HTTPError as exc:
            raise ToolExecutionError(f"Request failed: {shown}: {str(exc) or type(exc).__name__}") from None
        if status >= 400:
            snippet = truncate(" ".join(text.split()), ERROR_SNIPPET_CHARS)
            raise ToolExecutionError(f"HTTP {status} {reason} from {shown}: {snippet or '(empty body)'}")
        return truncate(text, max_chars) if text.strip() else f"(empty response, HTTP {status})"

    def _send(start: httpx.URL, method: str, headers: dict[str, str], body: dict[str, Any] | None,
              deadline: float) -> tuple[int, str, str]:
        """Send the request, following redirects by hand; (status, reason, body text)."""
        from corral_core.tools.builtin.pinned_http import GuardedHttp, origin

        declared, current = origin(start), start
        with GuardedHttp(timeout=timeout, resolver=resolver or system_resolver,
                         network_backend=network_backend) as http:
            for _hop in range(MAX_REDIRECTS + 1):
                same_origin = origin(current) == declared
                # the declared host is the author's choice; any other host must be public (unless allowed)
                http.admit(current, check=not (same_origin or allow_private))
                with http.client.stream(method, current, headers=headers if same_origin else None,
                                        json=body) as response:
                    status, location = response.status_code, response.headers.get("location")
                    if status not in REDIRECT_CODES or not location:
                        return status, response.reason_phrase, _read_capped(response, max_bytes, deadline)
                next_url = current.join(location)
                if next_url.scheme not in ALLOWED_SCHEMES:
                    raise ToolExecutionError(f"Refused the redirect from {current} to {next_url}: only http "
                                             "and https are followed.")
                if status == 303 or (status in (301, 302) and method == "POST"):
                    method, body = "GET", None  # what browsers (and httpx) do
                current = next_url
        raise ToolExecutionError(f"Too many redirects (more than {MAX_REDIRECTS}) after {verb} {start}.")

    tool_description = description or f"Call {verb} {url}."
    return Tool(name, tool_description, schema, call_endpoint, risk=risk, render=render)
