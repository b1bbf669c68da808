"""fetch_url against a real HTTP server on 127.0.0.1: redirects, walls, caps, content types, addresses."""

from __future__ import annotations

import socket
import threading
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpcore
import pytest

from corral_core.tools.builtin import fetch_url_tool
from corral_core.tools.builtin.html_text import html_to_text
from corral_core.tools.builtin.netguard import is_public_address, wall_host
from corral_core.tools.errors import ToolExecutionError
from tests.fakes.network import LoopbackBackend
from tests.timeouts import HANG

PAGE = (
    "<html><head><title>Title</title><style>p{color:red}</style></head><body>"
    "<nav>Menu</nav><h1>Ethanol</h1><p>Boils at   78.37 &deg;C.</p>"
    "<script>var secret = 'do not show';</script><p>Second paragraph.</p></body></html>"
)
HUGE_BYTES = 50 * 1024 * 1024
CHUNK = b"x" * 65536


class PageHandler(BaseHTTPRequestHandler):
    """Routes for the tests; `server.sent` counts body bytes the huge routes managed to write."""

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def _send(self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8") -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
            pass

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _stream(self, content_type: str, head: bytes, chunk: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(HUGE_BYTES))
        self.end_headers()
        try:
            self.wfile.write(head)
            self.server.sent = len(head)  # type: ignore[attr-defined]
            while self.server.sent < HUGE_BYTES:  # type: ignore[attr-defined]
                self.wfile.write(chunk)
                self.server.sent += len(chunk)  # type: ignore[attr-defined]
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.server.streamed.set()  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        self.server.hosts.append(self.headers.get("Host"))  # type: ignore[attr-defined]
        routes = {
            "/page": lambda: self._send(200, PAGE.encode()),
            "/redirect": lambda: self._redirect("/page"),
            "/chain": lambda: self._redirect("/redirect"),
            "/loop": lambda: self._redirect("/loop"),
            "/wall": lambda: self._redirect("http://consent.example.invalid/cookies?continue=/page"),
            "/to-ftp": lambda: self._redirect("ftp://example.org/file"),
            "/to-loopback": lambda: self._redirect(f"http://127.0.0.1:{self.server.server_port}/page"),
            "/image": lambda: self._send(200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "image/png"),
            "/missing": lambda: self._send(404, b"<p>nothing here</p>"),
            "/scripts-only": lambda: self._send(200, b"<script>only code</script>"),
            "/plain": lambda: self._send(200, "caf\u00e9 au lait".encode("latin-1"), "text/plain; charset=latin-1"),
            "/huge": lambda: self._stream("text/html", b"<p>start of a huge page</p><script>", CHUNK),
            "/huge-text": lambda: self._stream("text/plain", b"", b"lorem ipsum " * 5000),
            "/slow": self._slow,
        }
        routes.get(self.path, lambda: self._send(404, b"unknown route"))()

    def _slow(self) -> None:
        self.server.release.wait(HANG)  # type: ignore[attr-defined]  # answers when the test ends
        self._send(200, b"<p>late</p>")


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), PageHandler)
    httpd.daemon_threads = True
    httpd.hits = []  # type: ignore[attr-defined]
    httpd.hosts = []  # type: ignore[attr-defined]
    httpd.sent = 0  # type: ignore[attr-defined]
    httpd.streamed = threading.Event()  # type: ignore[attr-defined]  # a huge route stopped writing
    httpd.release = threading.Event()  # type: ignore[attr-defined]  # lets /slow answer
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.release.set()  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def base(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_port}"


def test_redirects_are_followed_and_the_final_url_reported(server: ThreadingHTTPServer) -> None:
    text = fetch_url_tool(allow_private=True).execute(url=f"{base(server)}/chain")
    header, _, body = text.partition("\n\n")
    assert header == f"Fetched: {base(server)}/page\nStatus: 200 text/html; charset=utf-8"
    assert body == "Menu\n\nEthanol\n\nBoils at 78.37 °C.\n\nSecond paragraph."
    assert server.hits == ["/chain", "/redirect", "/page"]  # type: ignore[attr-defined]


def test_redirect_to_a_consent_wall_fails_with_advice(server: ThreadingHTTPServer) -> None:
    with pytest.raises(ToolExecutionError, match="consent or login wall.*try a different result URL"):
        fetch_url_tool(allow_private=True).execute(url=f"{base(server)}/wall")


@pytest.mark.parametrize(
    ("url", "wall"),
    [
        ("https://consent.yahoo.com/v2/collectConsent?x=1", "consent.yahoo.com"),
        ("https://accounts.google.com/ServiceLogin", "accounts.google.com"),
        ("http://LOGIN.example.org/", "login.example.org"),
        ("https://idp.example.org", "idp.example.org"),
        ("https://auth.example.org", "auth.example.org"),
        ("https://signin.aws.amazon.com", "signin.aws.amazon.com"),
        ("https://finance.yahoo.com/quote/X", None),
        ("https://myaccounts.example.org/", None),
    ],
)
def test_wall_detection_looks_at_the_host_prefix(url: str, wall: str | None) -> None:
    assert wall_host(url) == wall


def test_a_50_mb_page_is_capped_in_bytes_time_and_memory(server: ThreadingHTTPServer) -> None:
    fetch = fetch_url_tool(allow_private=True)  # default cap: 2 MB
    tracemalloc.start()
    try:
        text = fetch.execute(url=f"{base(server)}/huge", max_chars=1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "Note: only the first 2000000 bytes of the page were read." in text
    assert text.endswith("start of a huge page")
    assert peak < 20 * 1024 * 1024
    assert server.streamed.wait(HANG)  # type: ignore[attr-defined]  # the server noticed the closed connection
    assert server.sent < HUGE_BYTES / 2  # type: ignore[attr-defined]


def test_a_huge_text_page_stops_at_the_text_budget(server: ThreadingHTTPServer) -> None:
    text = fetch_url_tool(allow_private=True).execute(url=f"{base(server)}/huge-text", max_chars=500)
    body = text.partition("\n\n")[2]
    assert body.startswith("lorem ipsum") and body.endswith(" …")
    assert len(body) <= 502


def test_binary_content_is_refused(server: ThreadingHTTPServer) -> None:
    with pytest.raises(ToolExecutionError, match="'image/png', not a text page"):
        fetch_url_tool(allow_private=True).execute(url=f"{base(server)}/image")


def test_plain_text_is_decoded_with_its_charset(server: ThreadingHTTPServer) -> None:
    text = fetch_url_tool(allow_private=True).execute(url=f"{base(server)}/plain")
    assert text.endswith("\n\ncafé au lait")


@pytest.mark.parametrize(
    ("route", "message"),
    [
        ("/missing", "HTTP 404 Not Found from .*/missing; try a different result URL"),
        ("/scripts-only", "No readable text"),
        ("/loop", r"Too many redirects \(more than 5\)"),
        ("/to-ftp", "Only http:// and https://"),
    ],
)
def test_failures_are_reported_in_words(server: ThreadingHTTPServer, route: str, message: str) -> None:
    with pytest.raises(ToolExecutionError, match=message):
        fetch_url_tool(allow_private=True).execute(url=f"{base(server)}{route}")


def test_slow_server_times_out(server: ThreadingHTTPServer) -> None:
    with pytest.raises(ToolExecutionError, match="Timed out after 0.5s"):  # /slow answers only when the test ends
        fetch_url_tool(allow_private=True, timeout=0.5).execute(url=f"{base(server)}/slow")


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.org/file.txt", "javascript:alert(1)", "example.org/page", "gopher://x"]
)
def test_non_http_schemes_are_refused(url: str) -> None:
    with pytest.raises(ToolExecutionError, match="Only http:// and https://"):
        fetch_url_tool().execute(url=url)


def test_loopback_is_refused_unless_allowed(server: ThreadingHTTPServer) -> None:
    port = server.server_port
    for url in (f"http://127.0.0.1:{port}/page", f"http://localhost:{port}/page", f"http://[::1]:{port}/page"):
        with pytest.raises(ToolExecutionError, match="private, loopback or link-local"):
            fetch_url_tool().execute(url=url)
    with pytest.raises(ToolExecutionError, match="169.254.169.254"):
        fetch_url_tool().execute(url="http://169.254.169.254/latest/meta-data/")
    assert server.hits == []  # type: ignore[attr-defined]
    assert "Ethanol" in fetch_url_tool(allow_private=True).execute(url=f"http://127.0.0.1:{port}/page")


def test_every_redirect_hop_is_checked_for_private_addresses(server: ThreadingHTTPServer) -> None:
    fetch = fetch_url_tool(
        network_backend=LoopbackBackend(stand_ins=["93.184.215.14"]),
        resolver=lambda host, port: ["93.184.215.14"] if host == "public.example" else ["127.0.0.1"],
    )
    port = server.server_port
    assert "Ethanol" in fetch.execute(url=f"http://public.example:{port}/page")
    assert server.hosts[-1] == f"public.example:{port}"  # type: ignore[attr-defined]  # Host names the URL's host
    with pytest.raises(ToolExecutionError, match="private, loopback"):
        fetch.execute(url=f"http://public.example:{port}/to-loopback")
    assert server.hits == ["/page", "/to-loopback"]  # type: ignore[attr-defined]


def test_ipv6_forms_of_loopback_are_refused(server: ThreadingHTTPServer) -> None:
    for host in ("[::127.0.0.1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:0:7f00:1]"):
        with pytest.raises(ToolExecutionError, match="private, loopback or link-local"):
            fetch_url_tool().execute(url=f"http://{host}:{server.server_port}/page")
    assert server.hits == []  # type: ignore[attr-defined]


def test_a_dns_answer_that_changes_after_the_check_cannot_reach_loopback(
        server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([["93.184.215.14"]])  # the check sees a public address; any later lookup, loopback

    def rebinding_resolver(host: str, port: int) -> list[str]:
        return next(answers, ["127.0.0.1"])

    real_connect = socket.create_connection
    dialled: list[str] = []

    def loopback_only(address, *args, **kwargs):  # no test traffic leaves this machine
        dialled.append(address[0])
        if address[0] == "93.184.215.14":
            raise OSError("unreachable from tests")
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", loopback_only)
    with pytest.raises(ToolExecutionError, match="Could not fetch"):
        fetch_url_tool(resolver=rebinding_resolver).execute(url=f"http://localhost:{server.server_port}/page")
    assert server.hits == []  # type: ignore[attr-defined]
    assert dialled == ["93.184.215.14"]  # the checked address, never a second answer


def test_https_to_a_pinned_address_still_names_the_host_for_sni() -> None:
    captured: dict[str, object] = {}

    class Handshake(httpcore.NetworkStream):
        def start_tls(self, ssl_context, server_hostname=None, timeout=None):
            captured["sni"] = server_hostname
            raise httpcore.ConnectError("stop at the handshake")

        def close(self) -> None:
            pass

    class Capturing(LoopbackBackend):
        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            captured["address"] = host
            return Handshake()

    fetch = fetch_url_tool(resolver=lambda host, port: ["93.184.215.14"], network_backend=Capturing())
    with pytest.raises(ToolExecutionError, match="Could not fetch"):
        fetch.execute(url="https://public.example/page")
    assert captured == {"address": "93.184.215.14", "sni": "public.example"}


def test_a_host_resolving_to_a_private_address_is_refused() -> None:
    fetch = fetch_url_tool(resolver=lambda host, port: ["93.184.215.14", "10.0.0.7"])
    with pytest.raises(ToolExecutionError, match=r"10\.0\.0\.7"):
        fetch.execute(url="https://mixed.example/")


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.215.14", True),
        ("2606:4700:4700::1111", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fd00::1", False),
        ("::ffff:127.0.0.1", False),
        ("::127.0.0.1", False),  # IPv4-compatible: loopback in disguise
        ("::ffff:10.0.0.1", False),
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo (its client is 192.0.2.45)
        ("64:ff9b::5db8:d70e", True),  # NAT64 of a public address
    ],
)
def test_public_address_classification(address: str, public: bool) -> None:
    assert is_public_address(address) is public


def test_html_extraction_skips_code_and_collapses_whitespace() -> None:
    html = (
        "<html><head><title>T</title><body><h1>Hi</h1><p>a \n  &amp;   b</p><noscript>enable js</noscript>"
        "<ul><li>one<li>two</ul>tail <svg><text>icon</text></svg>end<br>next"
    )
    assert html_to_text(html, 1000) == "Hi\n\na & b\n\none\ntwo\ntail end\nnext"
    assert html_to_text("<pre>x = 1\ny = 2</pre><p>after</p>", 1000) == "x = 1\ny = 2\n\nafter"
    assert html_to_text("<p>" + "word " * 10000 + "</p>", 100) == ("word " * 20).strip()
