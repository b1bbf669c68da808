"""web_search: formatting, provider failures and hangs in words, and the real ddgs class offline."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from corral_core.tools.builtin import DdgsSearchProvider, SearchResult, web_search_tool
from corral_core.tools.builtin.web_search import validate_backend
from corral_core.tools.errors import ToolExecutionError


class FakeProvider:
    """Returns canned results and records what it was asked."""

    def __init__(self, results: list) -> None:
        self.results = results
        self.calls: list[tuple[str, int]] = []

    def search(self, query: str, *, max_results: int) -> list:
        self.calls.append((query, max_results))
        return self.results[:max_results]


class FailingProvider:
    def search(self, query: str, *, max_results: int) -> list:
        raise RuntimeError("rate limited by upstream")


class HangingProvider:
    def __init__(self) -> None:
        self.release = threading.Event()

    def search(self, query: str, *, max_results: int) -> list:
        self.release.wait(30)
        return []


def test_results_are_numbered_title_url_snippet_lines() -> None:
    provider = FakeProvider(
        [
            SearchResult("Ethanol - Wikipedia", "https://en.wikipedia.org/wiki/Ethanol",
                         "Ethanol boils at\n 78.37 °C."),
            {"title": "Ethanol data", "href": "https://example.org/ethanol", "body": "Physical properties"},
        ]
    )
    search = web_search_tool(provider=provider, max_results=5)
    text = search.execute(query="  ethanol boiling point ")
    assert text == (
        "Web search results for: ethanol boiling point\n"
        "\n"
        "1. Ethanol - Wikipedia\n"
        "   https://en.wikipedia.org/wiki/Ethanol\n"
        "   Ethanol boils at 78.37 °C.\n"
        "\n"
        "2. Ethanol data\n"
        "   https://example.org/ethanol\n"
        "   Physical properties"
    )
    assert provider.calls == [("ethanol boiling point", 5)]


def test_max_results_is_passed_on_and_capped() -> None:
    provider = FakeProvider([SearchResult(f"t{i}", f"https://e.org/{i}") for i in range(30)])
    search = web_search_tool(provider=provider)
    assert "2. t1" in search.execute(query="q", max_results=2)
    assert "3. t2" not in search.execute(query="q", max_results=2)
    search.execute(query="q", max_results=500)
    assert provider.calls[-1] == ("q", 20)


def test_no_results_and_empty_query() -> None:
    search = web_search_tool(provider=FakeProvider([]))
    assert search.execute(query="zzzz") == "No results found for: zzzz"
    with pytest.raises(ToolExecutionError, match="query is empty"):
        search.execute(query="   ")


def test_provider_exception_becomes_a_failure_in_words() -> None:
    search = web_search_tool(provider=FailingProvider())
    with pytest.raises(ToolExecutionError, match="Web search failed: rate limited by upstream"):
        search.execute(query="anything")


def test_hanging_provider_fails_after_the_timeout() -> None:
    provider = HangingProvider()
    search = web_search_tool(provider=provider, timeout=0.3)
    try:  # the provider answers only once released: the tool's timeout is the only way back
        with pytest.raises(ToolExecutionError, match=r"timed out after 0.3s"):
            search.execute(query="slow")
    finally:
        provider.release.set()


@pytest.fixture
def dead_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Route ddgs through a closed local port, so it fails the same with or without internet."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{port}")
    yield


def test_real_ddgs_provider_offline_fails_quickly(dead_proxy: None) -> None:
    search = web_search_tool(provider=DdgsSearchProvider("duckduckgo", timeout=5), timeout=10)
    with pytest.raises(ToolExecutionError, match="Web search (failed|timed out)"):  # the tool's timeout bounds it
        search.execute(query="corral benchmark")


@pytest.mark.parametrize("backend", ["auto", "all", "duckduckgo,auto", "", "nosuchengine"])
def test_random_empty_or_unknown_backends_are_refused(backend: str) -> None:
    with pytest.raises(ValueError, match="backend"):
        validate_backend(backend)
    with pytest.raises(ValueError):
        web_search_tool(backend=backend)


def test_named_backends_are_accepted() -> None:
    assert validate_backend("duckduckgo") == "duckduckgo"
    assert validate_backend(" duckduckgo , wikipedia ") == "duckduckgo,wikipedia"
    assert web_search_tool(backend="wikipedia").name == "web_search"


def test_the_backends_checked_without_ddgs_are_those_of_the_installed_ddgs() -> None:
    """Suites naming these are checked without importing ddgs: an upgrade of ddgs that drops or adds
    a text backend fails here (update KNOWN_BACKENDS with the pin)."""
    from ddgs.engines import ENGINES

    from corral_core.tools.builtin.web_search import KNOWN_BACKENDS

    assert tuple(sorted(ENGINES["text"])) == KNOWN_BACKENDS
