"""No secret we read is ever written out: planted keys, grepped in every artefact of a batch run.

The keys: OPENAI_API_KEY from the environment (a provider 401 echoes it), a key in `.env` read
through `api_key_env` (echoed too), an Authorization header written in the spec (echoed), an
`extra_headers` value in the spec, the userinfo of an `api_base` that cannot be reached (our own
"cannot reach the model (api_base ...)" message names it) and the userinfo of one that answers
(sent as `Basic base64(user:password)`, which the 401 echoes). The store file, `--json`, JUnit, both
exports, stdout, stderr and the spans an OTLP receiver gets must hold none of them, nor the base64
form of any; the errors must still say what went wrong.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.fakes.fake_openai import FakeOpenAI, FakeReply

ROOT = Path(__file__).resolve().parents[2]
SAMPLEMATH = ROOT / "sample_tasks" / "samplemath.yaml"
KEYS = {
    "environment": "sk-env-4a1b2c3d4e5f60718293a4b5",
    "dotenv": "sk-dotenv-9f8e7d6c5b4a39281706f5e4",
    "spec api_key": "sk-spec-0a9b8c7d6e5f4a3b2c1d0e9f",
    "spec header": "hdr-secret-55aa66bb77cc88dd",
    "userinfo": "pw-userinfo-1234abcd5678efgh",
    "echoed userinfo": "pw-basic-aa11bb22cc33dd44",
}
FORMS = {**KEYS, **{f"{name} (base64)": base64.b64encode(key.encode()).decode() for name, key in KEYS.items()},
         "echoed userinfo (Basic)": base64.b64encode(f"corral:{KEYS['echoed userinfo']}".encode()).decode()}


class OtlpReceiver(BaseHTTPRequestHandler):
    """Keeps the body of every OTLP/HTTP trace export (protobuf: its strings are plain UTF-8 in it)."""

    received: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.received.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "corral_tui.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_planted_keys_appear_in_no_artefact_and_no_span(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"DOTENV_PROVIDER_KEY={KEYS['dotenv']}\n")
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), type("Receiver", (OtlpReceiver,), {"received": []}))
    receiving = threading.Thread(target=receiver.serve_forever, daemon=True)
    receiving.start()
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.pop("OTEL_SDK_DISABLED", None)
    env.update(OPENAI_API_KEY=KEYS["environment"], LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR",
               OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{receiver.server_address[1]}")
    with FakeOpenAI([FakeReply.unauthorized()], repeat_last=True) as server:
        base = {"id": "openai/fake-model", "api_base": server.base_url, "max_retries": 0, "timeout": 30}
        spec = {
            "name": "secrets", "suite": str(SAMPLEMATH), "tasks": ["add"], "trials_per_task": 1,
            "agent": {"type": "tool_calling"},
            "model": {**base, "extra": {"extra_headers": {"X-Team-Token": KEYS["spec header"]}}},
            "arms": [
                {"name": "environment"},
                {"name": "dotenv", "model": {**base, "api_key_env": "DOTENV_PROVIDER_KEY"}},
                {"name": "spec_key", "model": {**base, "extra": {
                    "extra_headers": {"Authorization": f"Bearer {KEYS['spec api_key']}"}}}},
                {"name": "userinfo", "model": {**base, "api_base": f"http://corral:{KEYS['userinfo']}@127.0.0.1:9/v1"}},
                {"name": "basic", "model": {**base, "api_base": server.base_url.replace(
                    "http://", f"http://corral:{KEYS['echoed userinfo']}@")}},
            ],
        }
        spec_path = tmp_path / "secrets.bench.yaml"
        spec_path.write_text(yaml.safe_dump(spec))
        db, out, junit = tmp_path / "x.db", tmp_path / "out.json", tmp_path / "out.xml"
        run = cli("--batch", str(spec_path), "--db", str(db), "--json", str(out), "--junit", str(junit),
                  cwd=tmp_path, env=env)
        echoed = [r.headers.get("authorization", "") for r in server.received]
    receiver.shutdown()
    receiver.server_close()
    receiving.join()
    assert run.returncode == 1, run.stderr  # every trial errored
    assert any(KEYS["environment"] in a for a in echoed) and any(KEYS["dotenv"] in a for a in echoed)
    assert any(KEYS["spec api_key"] in a for a in echoed), echoed
    assert any(FORMS["echoed userinfo (Basic)"] in a for a in echoed), echoed
    document = json.loads(out.read_text())
    errors = {t["arm"]: t["error"] for t in document["trials"]}
    assert set(errors) == {"environment", "dotenv", "spec_key", "userinfo", "basic"}
    for arm in ("environment", "dotenv", "spec_key", "basic"):
        assert "Incorrect API key provided: " in errors[arm] and errors[arm].endswith("***"), errors[arm]
    assert "cannot reach the model" in errors["userinfo"] and "http://***@127.0.0.1:9/v1" in errors["userinfo"]
    csv_export = cli("export", document["benchmark_id"], "--format", "csv", "--db", str(db), cwd=tmp_path, env=env)
    json_export = cli("export", document["benchmark_id"], "--format", "json", "--db", str(db), cwd=tmp_path, env=env)
    assert csv_export.returncode == json_export.returncode == 0, csv_export.stderr + json_export.stderr
    artefacts = {
        "store": db.read_bytes().decode("utf-8", "replace"),
        "--json": out.read_text(), "junit": junit.read_text(),
        "stdout": run.stdout, "stderr": run.stderr,
        "csv export": csv_export.stdout, "json export": json_export.stdout,
    }
    for path in tmp_path.glob("x.db-*"):  # WAL or journal left beside the store
        artefacts[path.name] = path.read_bytes().decode("utf-8", "replace")
    spans = b"".join(receiver.RequestHandlerClass.received).decode("utf-8", "replace")  # type: ignore[attr-defined]
    assert "Incorrect API key provided" in spans  # the spans were exported, errors and all
    artefacts["spans"] = spans
    leaks = [(name, where) for where, text in artefacts.items() for name, key in FORMS.items() if key in text]
    assert leaks == []
    assert "***" in json_export.stdout and "***" in artefacts["store"]


def test_log_lines_and_userinfo_are_masked(caplog: Any) -> None:
    import logging

    from corral_core.safetext import clean, install_log_redaction, register_environment

    register_environment({"SOME_SERVICE_TOKEN": "tok-0123456789abcdef", "HOME": "/root/plain"})
    install_log_redaction()
    logging.getLogger("corral_core.test").warning("calling with %s", "tok-0123456789abcdef")
    assert "calling with ***" in caplog.text and "tok-0123456789abcdef" not in caplog.text
    assert clean({"url": "postgresql://me:pw-0000@db/x", "home": "/root/plain"}) == \
        {"url": "postgresql://***@db/x", "home": "/root/plain"}


def test_a_store_password_given_as_a_query_value_is_not_printed(tmp_path: Path) -> None:
    password = "PgQueryPw-5c4b3a2918f7e6d5"
    spec = tmp_path / "pg.bench.yaml"
    spec.write_text(yaml.safe_dump({"name": "pg", "suite": str(SAMPLEMATH), "tasks": ["add"],
                                    "model": "scripted/samplemath", "trials_per_task": 1}))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}
    run = cli("--batch", str(spec), "--db", f"postgresql+psycopg://u@127.0.0.1:9/x?password={password}",
              cwd=tmp_path, env=env)
    assert run.returncode == 2 and "opening the store postgresql+psycopg://***@127.0.0.1:9/x?password=***" in run.stderr
    assert password not in run.stdout + run.stderr
