"""fetch_url: download one web page and return its readable text, within bytes, time and address limits.

Redirects are followed by hand so every hop is checked (scheme, consent/login wall, private
address) before it is requested, and every connection goes to the address that was checked
(pinned_http.GuardedHttp pins it, so DNS rebinding cannot redirect it). The body is streamed and
reading stops at `max_bytes` or once the text extractor holds about 3x `max_chars`, so a huge page
cannot exhaust memory.
"""

from __future__ import annotations

import codecs
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from corral_core.tools.base import Tool, ToolExecutionError
from corral_core.tools.builtin.html_text import ReadableTextParser
from corral_core.tools.builtin.netguard import (
    MAX_REDIRECTS,
    REDIRECT_CODES,
    Resolver,
    check_scheme,
    check_wall,
    system_resolver,
)
from corral_core.tools.builtin.params import truncate, unwrap

if TYPE_CHECKING:  # httpx is imported at the first fetch, not when a suite declaring the tool loads
    import httpcore
    import httpx

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_CHARS = 4000
MAX_CHARS_CAP = 20000
DEFAULT_MAX_BYTES = 2_000_000
DEFAULT_MAX_REDIRECTS = MAX_REDIRECTS
BROWSER_HEADERS = {
    # A plain bot User-Agent is rejected by Cloudflare on most news and finance sites.
    "User-Agent": (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/126.0.0.0 Safari/537.36"
    ),
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,text/plain;q=0.8,*/*;q=0.5",
    "Accept-Language": "en-US,en;q=0.9",
}
_TEXT_APPLICATION_TYPES = frozenset(
    {"application/json", "application/xml", "application/xhtml+xml", "application/javascript"}
)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

FETCH_URL_DESCRIPTION = unwrap(
    """\
[BRIEF] Download one web page (http or https) and return its readable text. [/BRIEF]
[DETAILED] HTML is reduced to visible text (scripts, styles and navigation markup dropped); plain
text, JSON and XML are returned as they are. The answer starts with "Fetched: <final URL>" and
"Status: <code> <content type>" so you can cite the exact source after redirects. [/DETAILED]
[PROCEDURAL] Use it after web_search, on the result whose title and snippet look most relevant, or on
a URL the task gives you. [/PROCEDURAL]
[WORKFLOW_INTEGRATION] If a page fails (HTTP error, consent or login wall, not a text page), call
fetch_url again with a different result URL rather than retrying the same one. [/WORKFLOW_INTEGRATION]
[SYNTACTICAL] {"url": "https://example.org/page", "max_chars": 4000} [/SYNTACTICAL]
[LIMITATIONS] Text only (no images or PDFs); at most max_chars characters (cut with " …"); pages
behind logins, cookie walls or bot protection fail; private and local network addresses are
refused. [/LIMITATIONS]
[EXAMPLES] {"url": "https://en.wikipedia.org/wiki/Ethanol", "max_chars": 2000} [/EXAMPLES]"""
)


@dataclass(frozen=True)
class FetchSettings:
    """Limits and collaborators of one fetch_url tool (resolver and network backend are for tests)."""

    allow_private: bool = False
    timeout: float = DEFAULT_TIMEOUT
    max_bytes: int = DEFAULT_MAX_BYTES
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    resolver: Resolver = system_resolver
    network_backend: httpcore.NetworkBackend | None = None


def is_text_type(mime: str) -> bool:
    """Content types fetch_url will read: text/*, JSON, XML and their +json/+xml variants."""
    return (
        mime.startswith("text/")
        or mime in _TEXT_APPLICATION_TYPES
        or mime.endswith("+xml")
        or mime.endswith("+json")
    )


def _read_text(response: httpx.Response, max_chars: int, settings: FetchSettings, deadline: float) -> tuple[str, str]:
    """Stream the body into text; returns (text, note) where note explains an early stop."""
    mime = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    encoding = response.charset_encoding or "utf-8"
    try:
        decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    except LookupError:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    budget = 3 * max_chars
    parser = ReadableTextParser(budget) if (mime in _HTML_TYPES or not mime) else None
    plain: list[str] = []
    plain_chars = 0
    received = 0
    note = ""
    for chunk in response.iter_bytes():
        room = settings.max_bytes - received
        if len(chunk) >= room:
            chunk = chunk[:room]
            note = f"Note: only the first {settings.max_bytes} bytes of the page were read."
        received += len(chunk)
        text = decoder.decode(chunk)
        if parser is not None:
            parser.feed(text)
        else:
            plain.append(text)
            plain_chars += len(text)
        if note or (parser.full if parser is not None else plain_chars >= budget):
            break
        if time.monotonic() > deadline:
            note = f"Note: reading stopped after {settings.timeout:g}s; only the start of the page was read."
            break
    if parser is not None:
        parser.close()
        return parser.text(), note
    return "".join(plain).strip(), note


def fetch_page(url: str, max_chars: int, settings: FetchSettings) -> str:
    """Fetch `url` under `settings` and format the header plus readable text; failures raise in words."""
    import httpx

    from corral_core.tools.builtin.pinned_http import GuardedHttp

    url = url.strip()
    check_scheme(url)
    check_wall(url)
    deadline = time.monotonic() + settings.timeout
    current = url
    try:
        with GuardedHttp(timeout=settings.timeout, resolver=settings.resolver, headers=BROWSER_HEADERS,
                         network_backend=settings.network_backend) as http:
            for _hop in range(settings.max_redirects + 1):
                target = http.admit(current, check=not settings.allow_private)
                if time.monotonic() > deadline:
                    raise httpx.TimeoutException("deadline passed during redirects")
                with http.client.stream("GET", target) as response:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_CODES and location:
                        current = urljoin(str(response.url), location)
                        check_scheme(current)
                        check_wall(current)
                        continue
                    return _format_page(response, max_chars, settings, deadline)
    except httpx.TimeoutException:
        raise ToolExecutionError(f"Timed out after {settings.timeout:g}s fetching {current}.") from None
    except httpx.HTTPError as exc:
        raise ToolExecutionError(f"Could not fetch {current}: {str(exc) or type(exc).__name__}.") from None
    raise ToolExecutionError(
        f"Too many redirects (more than {settings.max_redirects}) starting from {url}; try a different result URL."
    )


def _format_page(response: httpx.Response, max_chars: int, settings: FetchSettings, deadline: float) -> str:
    final_url = str(response.url)
    status = response.status_code
    content_type = response.headers.get("content-type", "").strip()
    mime = content_type.split(";", 1)[0].strip().lower()
    if status >= 400:
        raise ToolExecutionError(
            f"HTTP {status} {response.reason_phrase} from {final_url}; try a different result URL."
        )
    if mime and not is_text_type(mime):
        raise ToolExecutionError(
            f"{final_url} is '{mime}', not a text page; fetch_url reads HTML, plain text, JSON and XML only."
        )
    text, note = _read_text(response, max_chars, settings, deadline)
    if not text:
        raise ToolExecutionError(f"No readable text at {final_url}; try a different result URL.")
    lines = [f"Fetched: {final_url}", f"Status: {status} {truncate(content_type, 100) or '(no content type)'}"]
    if note:
        lines.append(note)
    return "\n".join(lines) + "\n\n" + truncate(text, max_chars)


def fetch_url_tool(
    *,
    allow_private: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    resolver: Resolver | None = None,
    network_backend: httpcore.NetworkBackend | None = None,
    name: str = "fetch_url",
    risk: str = "safe",
) -> Tool:
    """The fetch_url builtin; `allow_private=True` permits loopback/private hosts (local test servers)."""
    if timeout <= 0 or max_bytes <= 0 or max_redirects < 0 or not 1 <= max_chars <= MAX_CHARS_CAP:
        raise ValueError(
            f"fetch_url needs timeout > 0, max_bytes > 0, max_redirects >= 0 and 1 <= max_chars <= {MAX_CHARS_CAP}."
        )
    settings = FetchSettings(
        allow_private=allow_private,
        timeout=timeout,
        max_bytes=max_bytes,
        max_redirects=max_redirects,
        resolver=resolver or system_resolver,
        network_backend=network_backend,
    )

    def fetch_url(url: str, max_chars: int = max_chars) -> str:
        limit = min(max(int(max_chars), 200), MAX_CHARS_CAP)
        return fetch_page(url, limit, settings)

    parameters = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "[BRIEF] The http:// or https:// URL to read. [/BRIEF]"},
            "max_chars": {
                "type": "integer",
                "description": f"[BRIEF] Most characters of text to return (200-{MAX_CHARS_CAP}). [/BRIEF]",
                "default": max_chars,
            },
        },
        "required": ["url"],
    }
    return Tool(name, FETCH_URL_DESCRIPTION, parameters, fetch_url, risk=risk)
