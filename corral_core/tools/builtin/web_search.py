"""web_search: titles, URLs and snippets from a search provider (ddgs by default), never a hang.

The provider sits behind `SearchProvider` so tests use a fake: ddgs resolves DNS in Rust, so
socket patching cannot keep it offline. Every provider call runs in a daemon thread joined with
the timeout, so a stuck provider turns into a failure instead of a stuck trial.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from corral_core.deadline import call_with_timeout
from corral_core.tools.base import Tool, ToolExecutionError
from corral_core.tools.builtin.params import truncate, unwrap

DEFAULT_BACKEND = "duckduckgo"
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_RESULTS = 5
MAX_RESULTS_CAP = 20
SNIPPET_CHARS = 300
# The text backends of ddgs 9.16 (pinned; a test fails when the installed ddgs offers others): a suite
# naming only these is checked without importing ddgs (~0.1 s at every start), and they are the list
# when ddgs cannot be imported (see available_backends).
KNOWN_BACKENDS = ("brave", "duckduckgo", "grokipedia", "mojeek", "startpage", "wikipedia", "yahoo")

WEB_SEARCH_DESCRIPTION = unwrap(
    """\
[BRIEF] Search the web and return result titles, URLs and snippets (pages are not downloaded). [/BRIEF]
[DETAILED] Returns a numbered list; each entry has the page title, its URL and a short snippet. [/DETAILED]
[PROCEDURAL] Use it to discover candidate pages for a question you cannot answer from the task alone. [/PROCEDURAL]
[WORKFLOW_INTEGRATION] Pick the most promising result from its title and snippet, then read it with
fetch_url; if that page fails, try the next result. [/WORKFLOW_INTEGRATION]
[SYNTACTICAL] {"query": "<search words>", "max_results": 5} [/SYNTACTICAL]
[LIMITATIONS] Snippets are short and can be stale; at most 20 results; a slow or unreachable search
service is reported as an error after the timeout. [/LIMITATIONS]
[EXAMPLES] {"query": "boiling point of ethanol"} [/EXAMPLES]"""
)


@dataclass(frozen=True)
class SearchResult:
    """One search hit."""

    title: str
    url: str
    snippet: str = ""


@runtime_checkable
class SearchProvider(Protocol):
    """Anything that can answer a text query with search results; it may raise on failure."""

    def search(self, query: str, *, max_results: int) -> Sequence[SearchResult | Mapping[str, Any]]: ...


def available_backends() -> tuple[str, ...]:
    """The text backends the installed ddgs offers (imports ddgs.engines, ~0.1 s, no network)."""
    try:
        from ddgs.engines import ENGINES
    except ImportError:  # ddgs missing: the static list still lets declarations be checked
        return KNOWN_BACKENDS
    return tuple(sorted(ENGINES.get("text", {})))


def validate_backend(backend: str) -> str:
    """Return `backend` if every comma-separated name is a named ddgs text backend.

    "auto" and "all" are refused: ddgs then picks engines at random, which makes runs
    irreproducible; an unknown name is refused because ddgs would silently fall back to "auto".
    """
    names = [part.strip() for part in str(backend).split(",") if part.strip()]
    if names and all(name in KNOWN_BACKENDS for name in names):
        return ",".join(names)
    available = available_backends()
    if not names:
        raise ValueError(f"search backend is empty; use one of: {', '.join(available)}.")
    for name in names:
        if name in ("auto", "all"):
            raise ValueError(f"search backend '{name}' picks engines at random; name one of: {', '.join(available)}.")
        if name not in available:
            raise ValueError(f"unknown search backend '{name}'; use one of: {', '.join(available)}.")
    return ",".join(names)


class DdgsSearchProvider:
    """Searches through the ddgs library with a named backend; ddgs is imported on first use."""

    def __init__(
        self,
        backend: str = DEFAULT_BACKEND,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        region: str = "us-en",
        safesearch: str = "moderate",
    ) -> None:
        self.backend = validate_backend(backend)
        self.timeout = timeout
        self.region = region
        self.safesearch = safesearch

    def search(self, query: str, *, max_results: int) -> list[SearchResult]:
        from ddgs import DDGS

        client = DDGS(timeout=max(1, math.ceil(self.timeout)))
        rows = client.text(
            query,
            backend=self.backend,
            max_results=max_results,
            region=self.region,
            safesearch=self.safesearch,
        )
        return [
            SearchResult(
                title=str(row.get("title") or ""),
                url=str(row.get("href") or row.get("url") or ""),
                snippet=str(row.get("body") or row.get("snippet") or ""),
            )
            for row in rows
        ]


def _as_result(item: SearchResult | Mapping[str, Any]) -> SearchResult:
    if isinstance(item, SearchResult):
        return item
    return SearchResult(
        title=str(item.get("title") or ""),
        url=str(item.get("url") or item.get("href") or ""),
        snippet=str(item.get("snippet") or item.get("body") or ""),
    )


def format_results(query: str, results: Sequence[SearchResult]) -> str:
    """Numbered title / URL / snippet entries under a 'Web search results for:' header."""
    if not results:
        return f"No results found for: {query}"
    lines = [f"Web search results for: {query}", ""]
    for number, result in enumerate(results, start=1):
        lines.append(f"{number}. {result.title.strip() or '(untitled)'}")
        lines.append(f"   {result.url}")
        snippet = " ".join(result.snippet.split())
        if snippet:
            lines.append(f"   {truncate(snippet, SNIPPET_CHARS)}")
        lines.append("")
    return "\n".join(lines).rstrip()


def _call_with_timeout(provider: SearchProvider, query: str, max_results: int, timeout: float) -> list[Any]:
    outcome = call_with_timeout(lambda: list(provider.search(query, max_results=max_results)), timeout, "web-search")
    if outcome.timed_out:
        raise ToolExecutionError(f"Web search timed out after {timeout:g}s; try again or rephrase the query.")
    if outcome.error is not None:
        if isinstance(outcome.error, ToolExecutionError):
            raise outcome.error
        detail = str(outcome.error).strip() or type(outcome.error).__name__
        raise ToolExecutionError(f"Web search failed: {truncate(detail, 300)}")
    return outcome.value or []


def web_search_tool(
    provider: SearchProvider | None = None,
    *,
    backend: str = DEFAULT_BACKEND,
    timeout: float = DEFAULT_TIMEOUT,
    max_results: int = DEFAULT_MAX_RESULTS,
    name: str = "web_search",
    risk: str = "safe",
) -> Tool:
    """The web_search builtin; without `provider` it searches with ddgs on the named `backend`."""
    if timeout <= 0:
        raise ValueError("web_search timeout must be positive.")
    if not 1 <= max_results <= MAX_RESULTS_CAP:
        raise ValueError(f"web_search max_results must be between 1 and {MAX_RESULTS_CAP}.")
    search_provider: SearchProvider = provider or DdgsSearchProvider(backend, timeout=timeout)

    def web_search(query: str, max_results: int = max_results) -> str:
        query = query.strip()
        if not query:
            raise ToolExecutionError("The search query is empty; give some search words.")
        count = min(max(int(max_results), 1), MAX_RESULTS_CAP)
        raw = _call_with_timeout(search_provider, query, count, timeout)
        return format_results(query, [_as_result(item) for item in raw][:count])

    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "[BRIEF] The search words. [/BRIEF]"},
            "max_results": {
                "type": "integer",
                "description": f"[BRIEF] How many results to return (1-{MAX_RESULTS_CAP}). [/BRIEF]",
                "default": max_results,
            },
        },
        "required": ["query"],
    }
    return Tool(name, WEB_SEARCH_DESCRIPTION, parameters, web_search, risk=risk)
