"""External MCP sessions heal: a hung or frozen call is cancelled and its session reopened, a server
that died is restarted for the next call, a huge result is capped, and each trial has its own
session, so one trial's broken server is never its neighbours'.

The server (data/flaky_mcp_server.py, official SDK) is a real stdio subprocess. Its marker files
and process ids are what the tests wait on; the only time here is the call timeout in the YAML.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from corral_core.env import load_suite
from corral_core.env.records import ToolCall
from corral_core.env.suite import Suite
from corral_core.tools.errors import McpServerError, ToolEnvironmentError
from corral_core.tools.mcp_client import McpConnection, _session_closed
from corral_core.tools.mcp_tools import _connections, close_all_connections
from corral_core.tools.result_cap import MAX_RESULT_CHARS, json_size
from tests.timeouts import HANG, wait_until

FLAKY_SERVER = Path(__file__).resolve().parent / "data" / "flaky_mcp_server.py"
CALL_TIMEOUT = 6  # seconds the frozen and hung calls get before they are cancelled (2 s let a plain call to a
#   live server time out on a machine at load 15; a frozen call costs this much, once per test)


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    yield
    close_all_connections()


def flaky_suite(folder: Path, session: str = "trial") -> Suite:
    path = folder / "flaky.yaml"
    path.write_text(f"""\
name: flaky
tools:
  - name: flaky
    type: mcp
    command: [{sys.executable!r}, {str(FLAKY_SERVER)!r}]
    timeout: {CALL_TIMEOUT}
    start_timeout: {HANG}
    session: {session}
tasks:
  - {{id: t, prompt: "Use the tools.", answer: "ok"}}
""")
    return load_suite(path)


def connection() -> McpConnection:
    return McpConnection("flaky", command=[sys.executable, str(FLAKY_SERVER)], timeout=CALL_TIMEOUT,
                         start_timeout=HANG)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_frozen_server_is_stopped_at_the_timeout_and_the_next_call_answers(tmp_path: Path) -> None:
    env = flaky_suite(tmp_path).create_environment("t")
    marker = tmp_path / "freeze"
    frozen = env.call_tool("freeze", {"marker": str(marker)})
    assert frozen.status.value == "execution_error"
    assert f"the MCP server 'flaky' did not answer freeze within {CALL_TIMEOUT}s" in (frozen.error_message or "")
    frozen_pid = int(Path(str(marker) + ".started").read_text())
    wait_until(lambda: gone(frozen_pid), "the frozen server process to be stopped")
    again = env.call_tool("echo", {"text": "hi"})  # before: waited the timeout again, on the wedged session
    assert again.status.value == "success" and again.result == "hi"
    env.close()


def test_a_hung_call_is_cancelled_on_the_server_and_raised_as_an_environment_failure(tmp_path: Path) -> None:
    client = connection()
    client.start()
    marker = tmp_path / "hang"
    with pytest.raises(McpServerError) as info:
        client.call("hang", {"marker": str(marker)})
    failure = info.value
    assert isinstance(failure, ToolEnvironmentError) and failure.environment_failure
    assert (failure.server, failure.reason) == ("flaky", "timeout")
    assert f"did not answer hang within {CALL_TIMEOUT}s" in str(failure)
    wait_until(marker.exists, "the server to see the hung call cancelled")
    assert marker.read_text() == "cancelled"
    assert client.call("echo", {"text": "after"}).text == "after"  # type: ignore[union-attr]
    assert client.sessions_opened == 2
    client.close()


def test_a_server_that_dies_mid_call_is_restarted_for_the_next_call(tmp_path: Path) -> None:
    env = flaky_suite(tmp_path).create_environment("t")
    first_pid = int(env.call_tool("pid", {}).result or 0)
    died = env.call_tool("die", {})
    assert died.status.value == "execution_error"
    assert "the MCP server 'flaky' failed during die" in (died.error_message or "")
    again = env.call_tool("pid", {})  # before: "Connection closed" for every later call
    assert again.status.value == "success" and int(again.result or 0) != first_pid
    env.close()


def test_a_server_killed_between_calls_is_replaced_before_the_next_call() -> None:
    client = connection()
    client.start()
    first_pid = client.call("pid", {}).structured["result"]  # type: ignore[union-attr]
    os.kill(first_pid, signal.SIGKILL)
    live = client._live
    assert live is not None
    wait_until(lambda: _session_closed(live.session), "the session to see its server gone")
    assert client.call("echo", {"text": "hi"}).text == "hi"  # type: ignore[union-attr]  # nothing was lost
    assert client.sessions_opened == 2
    client.close()


def test_a_huge_result_is_capped_in_text_blocks_and_structured_content(tmp_path: Path) -> None:
    env = flaky_suite(tmp_path).create_environment("t")
    size = 50 * MAX_RESULT_CHARS  # 1 MB; the SDK's server answers text and {"result": text}
    call = env.call_tool("huge", {"chars": size})
    assert call.status.value == "success"
    assert call.result is not None and len(call.result) < MAX_RESULT_CHARS + 300
    cut = re.search(r"\[\.\.\. result cut: (\d+) more characters\]", call.result)
    assert cut is not None and size - MAX_RESULT_CHARS <= int(cut.group(1)) < size  # the size named
    assert "structured content of" in call.result and call.structured_content is None
    assert json_size(call.content) <= MAX_RESULT_CHARS + 300
    assert call.content and call.content[0]["text"].endswith("more characters]")
    assert env.call_tool("echo", {"text": "hi"}).result == "hi"
    env.close()


def test_each_trial_has_its_own_session_so_a_broken_one_is_not_its_neighbours(tmp_path: Path) -> None:
    suite = flaky_suite(tmp_path)
    first, second = suite.create_environment("t"), suite.create_environment("t")
    assert first.call_tool("bump", {}).result == "1"
    assert second.call_tool("bump", {}).result == "1"  # a fresh server state per trial
    second_pid = int(second.call_tool("pid", {}).result or 0)
    assert first.call_tool("die", {}).status.value == "execution_error"
    assert second.call_tool("bump", {}).result == "2"  # before: the shared session died for both

    marker = tmp_path / "freeze"
    frozen: list[ToolCall] = []
    caller = threading.Thread(target=lambda: frozen.append(first.call_tool("freeze", {"marker": str(marker)})))
    caller.start()
    wait_until(Path(str(marker) + ".started").exists, "the first trial's server to freeze")
    assert second.call_tool("echo", {"text": "still here"}).result == "still here"  # while the other is frozen
    caller.join(HANG)
    assert not caller.is_alive() and frozen[0].status.value == "execution_error"

    second.close()  # the trial's end closes its session: its server process stops
    wait_until(lambda: gone(second_pid), "the closed trial's server to stop")
    first.close()


def test_a_shared_session_heals_too(tmp_path: Path) -> None:
    suite = flaky_suite(tmp_path, session="shared")
    first, second = suite.create_environment("t"), suite.create_environment("t")
    assert first.call_tool("bump", {}).result == "1"
    assert second.call_tool("bump", {}).result == "2"  # one server state for every trial
    assert first.call_tool("die", {}).status.value == "execution_error"
    assert second.call_tool("bump", {}).result == "1"  # restarted
    assert len(_connections) == 1 and next(iter(_connections.values())).sessions_opened == 2


def test_an_unknown_session_mode_is_a_user_error(tmp_path: Path) -> None:
    from corral_core.errors import UserError

    with pytest.raises(UserError) as info:
        flaky_suite(tmp_path, session="pooled")
    assert "session must be trial or shared, got 'pooled'" in str(info.value)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def http_server(port: int) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, str(FLAKY_SERVER), "--http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: listening(port) or process.poll() is not None, "the HTTP MCP server to listen")
        assert process.poll() is None, "the HTTP MCP server did not start"
        yield process
    finally:
        process.kill()
        process.wait(HANG)


def test_a_streamable_http_server_restarted_under_a_session_is_reconnected(tmp_path: Path) -> None:
    port = free_port()
    client = McpConnection("flaky", url=f"http://127.0.0.1:{port}/mcp", timeout=CALL_TIMEOUT, start_timeout=HANG)
    with http_server(port):
        client.start()
        marker = tmp_path / "hang"
        with pytest.raises(McpServerError) as info:
            client.call("hang", {"marker": str(marker)})
        assert info.value.reason == "timeout"
        wait_until(marker.exists, "the HTTP server to see the hung call cancelled")
        assert client.call("bump", {}).structured == {"result": 1}  # type: ignore[union-attr]
        huge = client.call("huge", {"chars": 10 * MAX_RESULT_CHARS})
        assert json_size(huge.content) <= MAX_RESULT_CHARS + 300  # type: ignore[union-attr]
    with http_server(port):  # a new process: it answers 404 to the old session, and ran nothing
        assert client.call("bump", {}).structured == {"result": 1}  # type: ignore[union-attr]
        assert client.sessions_opened == 3
    client.close()


def test_trials_opened_on_a_server_each_get_a_session_closed_with_the_trial(tmp_path: Path) -> None:
    from corral_core.client import CorralRouter
    from corral_core.server import EmbeddedServer, create_app

    server = EmbeddedServer(create_app(flaky_suite(tmp_path)))
    try:
        with CorralRouter(server.start(), default_verbosity=None) as router:
            first, second = router.open_trial("t"), router.open_trial("t")
            assert first.execute_tool("t", "bump", {}).result == "1"
            assert second.execute_tool("t", "bump", {}).result == "1"  # its own server process
            first_pid = int(first.execute_tool("t", "pid", {}).result or 0)
            died = second.execute_tool("t", "die", {})
            assert not died.success and "failed during die" in (died.error or "")
            assert first.execute_tool("t", "bump", {}).result == "2"  # the neighbour's death is not its own
            first.close()  # DELETE /trials/{id}: the trial's session ends with it
            wait_until(lambda: gone(first_pid), "the closed trial's server process to stop")
            assert second.execute_tool("t", "bump", {}).result == "1"  # restarted after its death
            second.close()
    finally:
        server.stop()


def test_a_run_whose_mcp_server_freezes_goes_on_with_the_next_call(tmp_path: Path, monkeypatch) -> None:
    from corral_core.runner import BenchmarkRunner
    from corral_core.spec import spec_from_dict
    from tests.fakes.fake_openai import FakeOpenAI, FakeReply

    monkeypatch.setenv("CORRAL_TEST_MCP_KEY", "sk-fake")
    flaky_suite(tmp_path)
    replies = [FakeReply.tool_call("freeze", {"marker": str(tmp_path / "freeze")}),
               FakeReply.tool_call("echo", {"text": "after the freeze"}), FakeReply.text("Final Answer: ok")]
    with FakeOpenAI(replies) as fake:
        spec = {"name": "mcp-heal", "suite": str(tmp_path / "flaky.yaml"), "tasks": ["t"], "trials_per_task": 1,
                "parallel": 1, "agent": {"type": "tool_calling", "max_iterations": 4},
                "model": {"id": "openai/fake-model", "api_base": fake.base_url, "api_key_env": "CORRAL_TEST_MCP_KEY",
                          "max_retries": 0, "timeout": HANG}}
        BenchmarkRunner(spec_from_dict(spec, tmp_path)).run()
        last = fake.requests[-1]["messages"]
    tool_results = [str(message["content"]) for message in last if message["role"] == "tool"]
    assert len(tool_results) == 2
    assert f"the MCP server 'flaky' did not answer freeze within {CALL_TIMEOUT}s" in tool_results[0]
    assert "after the freeze" in tool_results[1]  # before: this call waited out the timeout on the wedged session
