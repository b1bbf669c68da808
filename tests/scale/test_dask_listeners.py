"""Every socket a `processes` cluster listens on is on loopback and serves nothing to a rebinding page.

Dask's scheduler and workers always start an HTTP server (its dashboard, identity, workers, logs, call
stacks); a page that rebinds its name to 127.0.0.1 could read it all (`Host: attacker.example`). Before
the fix the scheduler answered 200 on /info/main/workers.html, /json/identity.json, /health and more."""

from __future__ import annotations

import http.client
import os

import psutil

from corral_core.runner.executors import DaskExecutor

PATHS = ["/", "/health", "/status", "/info/main/workers.html", "/json/identity.json", "/json/index.html",
         "/metrics", "/sitemap.json", "/statics/", "/individual-plots.json", "/proxy/8787/127.0.0.1/status"]


def listening(process: psutil.Process) -> set[tuple[str, int]]:
    found: set[tuple[str, int]] = set()
    for proc in [process, *process.children(recursive=True)]:
        try:
            connections = proc.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        found |= {(c.laddr.ip, c.laddr.port) for c in connections if c.status == psutil.CONN_LISTEN}
    return found


def answer(host: str, port: int, path: str) -> tuple[int, bytes] | None:
    """(status, body) of an HTTP GET with a rebinding Host, or None when the socket does not speak HTTP."""
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": "attacker.example"})
        response = connection.getresponse()
        return response.status, response.read()
    except (http.client.HTTPException, OSError):
        return None
    finally:
        connection.close()


def test_a_processes_cluster_listens_on_loopback_only_and_answers_a_rebinding_page_nothing() -> None:
    with DaskExecutor("processes", workers=1) as executor:
        assert executor.workers() == 1
        sockets = listening(psutil.Process(os.getpid()))
        assert sockets, "the cluster listens somewhere"
        assert {ip for ip, _ in sockets} <= {"127.0.0.1"}, sockets
        served = {(port, path): reply for _, port in sockets for path in PATHS
                  if (reply := answer("127.0.0.1", port, path)) is not None and reply[0] < 400}
    # what remains is tornado's sitemap, which Dask always routes: it lists itself and nothing else
    assert {key: reply for key, reply in served.items()
            if not (key[1] == "/sitemap.json" and reply == (200, b'{"paths": ["/sitemap.json"]}'))} == {}
