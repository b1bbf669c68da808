"""Property-based fuzzing from the app's own OpenAPI document (schemathesis): no request yields a 5xx.

Every operation gets bounded positive and negative examples, sent over real HTTP to a live server;
path parameters are sometimes pinned to a real task or an open trial so the fuzzing reaches past
the 404s. Bounded: 20-40 examples per operation (10 per strategy), derandomised, no example
database, so the file runs in well under 20 s.
"""

from __future__ import annotations

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from corral_core.server import create_app
from tests.server.conftest import Served, make_suite

OPERATIONS = sorted(
    (method.upper(), path)
    for path, item in create_app(make_suite()).openapi()["paths"].items()
    for method in item
)
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
EXAMPLES_PER_OPERATION = 20


@pytest.fixture(scope="module")
def fuzz_target():
    # Tools that sleep are cut off quickly; confirm tools are rejected by the default policy.
    served = Served(tool_timeout=0.3)
    schema = schemathesis.openapi.from_url(f"{served.url}/openapi.json")
    operations = {(op.method.upper(), op.path): op for op in (r.ok() for r in schema.get_all_operations())}
    session = requests.Session()
    yield served, operations, session
    session.close()
    served.close()


def pinned_parameters(served, path: str) -> list[dict[str, str]]:
    pins: list[dict[str, str]] = []
    if "{task_id}" in path:
        pins.append({"task_id": "add"})
    if "{trial_id}" in path and not path.startswith("/tasks/"):
        pins.append({"trial_id": served.client.open_trial("add").trial_id})
    return pins


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_server_errors(fuzz_target, method, path):
    served, operations, session = fuzz_target
    operation = operations[(method, path)]
    strategies = [operation.as_strategy(mode) for mode in MODES]
    strategies += [operation.as_strategy(GenerationMode.POSITIVE, path_parameters=pins)
                   for pins in pinned_parameters(served, path)]
    failures: list[str] = []

    @settings(max_examples=max(EXAMPLES_PER_OPERATION, 10 * len(strategies)), deadline=None, derandomize=True,
              database=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    @given(case=st.one_of(strategies))
    def check(case):
        response = case.call(base_url=served.url, session=session, timeout=10)
        if response.status_code >= 500:
            failures.append(f"{case.method} {case.formatted_path} body={case.body!r} "
                            f"query={case.query!r} -> {response.status_code} {response.text[:300]}")

    check()
    assert not failures, "\n".join(failures[:5])
