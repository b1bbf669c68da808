"""Bearer-token auth, and `corral-tui serve` (serve_main): bad input exits 2 with a readable message."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from corral_core.client import CorralRouter, Unauthorized
from corral_core.server.auth import is_loopback_host
from corral_core.server.serve import serve_main
from tests.timeouts import HANG, HTTP_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
SAMPLE_SUITE = REPO / "sample_tasks" / "samplemath.yaml"


# --- auth ------------------------------------------------------------------------------------------


def test_token_is_required_everywhere_but_health(served_factory):
    served = served_factory(token="s3cret")
    with httpx.Client(base_url=served.url, timeout=HTTP_TIMEOUT) as http:
        assert http.get("/health").status_code == 200
        for path in ("/tasks", "/openapi.json", "/tasks/add/prompt", "/approvals"):
            response = http.get(path)
            assert response.status_code == 401, path
            assert response.headers["www-authenticate"] == "Bearer"
            assert "Bearer" in response.json()["detail"]
        assert http.get("/tasks", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert http.get("/tasks", headers={"Authorization": "s3cret"}).status_code == 401
        assert http.post("/tasks/add/submit", json={"answer": "5"}).status_code == 401
        assert http.get("/tasks", headers={"Authorization": "Bearer s3cret"}).json()[0] == "add"
    assert served.client.get_available_tasks()[0] == "add"  # the fixture's client sends the token
    with CorralRouter(served.url) as anonymous, pytest.raises(Unauthorized):
        anonymous.get_available_tasks()


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("192.168.1.5", False), ("::", False), ("example.org", False),
])
def test_is_loopback_host(host, loopback):
    assert is_loopback_host(host) is loopback


# --- serve_main: bad input -----------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def run_serve(capsys, *argv: str) -> tuple[int, str]:
    code = serve_main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_non_loopback_host_needs_a_token(capsys, monkeypatch):
    monkeypatch.delenv("CORRAL_TUI_TOKEN", raising=False)
    code, err = run_serve(capsys, str(SAMPLE_SUITE), "--host", "0.0.0.0")
    assert code == 2
    assert "--token" in err and "0.0.0.0" in err


def test_missing_suite_file(capsys, tmp_path):
    missing = tmp_path / "nope.yaml"
    code, err = run_serve(capsys, str(missing))
    assert code == 2 and "nope.yaml" in err


def test_suite_with_a_missing_field(capsys, tmp_path):
    suite = write(tmp_path / "bad.yaml", """\
        tasks:
          - id: a
            prompt: What?
            answer: 1
        """)
    code, err = run_serve(capsys, str(suite))
    assert code == 2
    assert "bad.yaml" in err and "name" in err


def test_suite_with_an_unknown_environment(capsys, tmp_path):
    suite = write(tmp_path / "env.yaml", """\
        name: x
        environment: ./missing_module.py
        tasks:
          - id: a
            prompt: What?
        """)
    code, err = run_serve(capsys, str(suite))
    assert code == 2
    assert "env.yaml" in err and "missing_module.py" in err


def test_suite_with_a_tool_that_fails_to_build(capsys, tmp_path):
    suite = write(tmp_path / "tools.yaml", """\
        name: x
        tools:
          - name: broken
            type: no_such_tool_type
        tasks:
          - id: a
            prompt: What?
        """)
    code, err = run_serve(capsys, str(suite))
    assert code == 2
    assert "tools.yaml" in err and "broken" in err


def test_bad_flags_exit_2(capsys):
    code, err = run_serve(capsys, str(SAMPLE_SUITE), "--approve", "maybe")
    assert code == 2 and "--approve" in err
    code, err = run_serve(capsys, str(SAMPLE_SUITE), "--port", "70000")
    assert code == 2 and "--port" in err
    code, err = run_serve(capsys, str(SAMPLE_SUITE), "--approve", "ask", "--approval-timeout", "0")
    assert code == 2 and "--approval-timeout" in err


def test_port_in_use_exit_2(capsys):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        code, err = run_serve(capsys, str(SAMPLE_SUITE), "--port", str(busy.getsockname()[1]))
    assert code == 2 and "cannot bind" in err


def test_bad_suite_in_a_subprocess_has_no_traceback(tmp_path):
    suite = write(tmp_path / "bad.yaml", "name: x\n")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from corral_core.server.serve import serve_main; "
                               f"sys.exit(serve_main([{str(suite)!r}]))"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert proc.returncode == 2
    assert "bad.yaml" in proc.stderr and "Traceback" not in proc.stderr


# --- serve_main: a real run ----------------------------------------------------------------------


def test_serve_runs_until_interrupted():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from corral_core.server.serve import serve_main; "
                               f"sys.exit(serve_main([{str(SAMPLE_SUITE)!r}, '--port', '0', '--token', 't']))"],
        stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
    )
    try:
        line = proc.stderr.readline()
        assert "samplemath" in line and "http://127.0.0.1:" in line, line
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        assert line.rstrip().endswith(f"; MCP at {url}/tasks/{{task_id}}/mcp and /trials/{{trial_id}}/mcp"), line
        with CorralRouter(url, token="t") as router:
            assert router.get_available_tasks() == ["add", "multiply", "divide", "power", "compound"]
            assert router.execute_tool("add", "calculator", {"operation": "+", "a": 17, "b": 25}).success
            assert router.submit_answer("add", "42").score == 1.0
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=HANG) == 0  # a server that ignored SIGINT would serve on: the bound is a hang
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_approve_flag_chooses_the_gate(capsys):
    from corral_core.env.approval import ApprovalRequest
    from corral_core.server import PolicyGate, QueueGate
    from corral_core.server.serve import _gate, build_parser

    parser = build_parser()
    reject = _gate(parser.parse_args(["s.yaml"]))
    auto = _gate(parser.parse_args(["s.yaml", "--approve", "auto"]))
    ask = _gate(parser.parse_args(["s.yaml", "--approve", "ask", "--approval-timeout", "0.05"]))
    assert isinstance(reject, PolicyGate) and reject.approve is False
    assert isinstance(auto, PolicyGate) and auto.approve is True
    assert isinstance(ask, QueueGate) and ask.timeout == 0.05
    assert ask.request(ApprovalRequest("add", None, "rm", {"path": "x"})).decided_by == "timeout"
    err = capsys.readouterr().err
    assert "rm(" in err and "POST /approvals/" in err


def test_bearer_scheme_is_case_insensitive_and_token_exact(tmp_path):
    import httpx

    from corral_core.server import EmbeddedServer, create_app

    from .conftest import make_suite

    with EmbeddedServer(create_app(make_suite(), token="s3cret", base_work_dir=tmp_path)) as server:
        for header, status in (("Bearer s3cret", 200), ("bearer s3cret", 200), ("BEARER s3cret", 200),
                               ("Bearer s3cre", 401), ("Basic s3cret", 401), ("s3cret", 401)):
            response = httpx.get(f"{server.url}/tasks", headers={"Authorization": header})
            assert response.status_code == status, header


def test_embedded_server_refuses_a_non_loopback_host_without_token():
    import pytest

    from corral_core.server import EmbeddedServer, create_app

    from .conftest import make_suite

    with pytest.raises(ValueError, match="token"):
        EmbeddedServer(create_app(make_suite()), host="0.0.0.0").start()


@pytest.mark.parametrize("flag", ["--approval-timeout", "--tool-timeout", "--grader-timeout"])
@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "soon"])
def test_serve_refuses_timeouts_that_are_not_positive_finite_seconds(flag, value, capsys):
    from corral_core.server.serve import serve_main

    assert serve_main([str(REPO / "sample_tasks" / "samplemath.yaml"), flag, value]) == 2
    assert flag in capsys.readouterr().err
