"""Property-based fuzzing from the app's own OpenAPI document (schemathesis): no request yields a 5xx.

Every operation gets bounded positive and negative examples, sent over real HTTP to a live server;
path parameters are sometimes pinned to a real task or an open trial so the fuzzing reaches past
the 404s. Hypothesis never generates lone UTF-16 surrogates on its own, so half the cases of an
operation with a body get their body strings (keys included) salted with them: the server must
answer those too (corral_core.safetext). Bounded: 20-40 examples per operation (10 per unsalted
strategy), derandomised, no example database, so the file runs in about 20 s.
"""

from __future__ import annotations

import json

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from corral_core.server import create_app
from tests.server.conftest import Served, make_suite
from tests.timeouts import HTTP_TIMEOUT

OPERATIONS = sorted(
    (method.upper(), path)
    for path, item in create_app(make_suite()).openapi()["paths"].items()
    for method in item
)
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
EXAMPLES_PER_OPERATION = 20
SURROGATES = st.characters(codec=None, categories=["Cs"])  # excluded by every default alphabet
SALTED_TEXT = st.lists(SURROGATES | st.characters(), min_size=1, max_size=6).map("".join)


@st.composite
def salted(draw: st.DrawFn, value: object) -> object:
    """`value` with some of its strings (dict keys too) replaced or extended with lone surrogates."""
    if isinstance(value, str):
        return draw(st.sampled_from(["keep", "append", "replace"]).flatmap(
            lambda how: st.just(value) if how == "keep" else SALTED_TEXT.map(
                lambda salt: value + salt if how == "append" else salt)))
    if isinstance(value, dict):
        return {draw(salted(key)): draw(salted(item)) for key, item in value.items()}
    if isinstance(value, list):
        return [draw(salted(item)) for item in value]
    return value


@st.composite
def with_surrogates(draw: st.DrawFn, cases: st.SearchStrategy) -> tuple[object, object]:
    """(case, salted JSON body): sent by hand, since schemathesis re-validates bodies in Rust,
    which cannot hold a lone surrogate."""
    case = draw(cases)
    return case, draw(salted(case.body if isinstance(case.body, (str, dict, list)) else {}))


def send_salted(session: requests.Session, base_url: str, case, body: object) -> requests.Response:
    return session.request(case.method, base_url + case.formatted_path, params=case.query, timeout=HTTP_TIMEOUT,
                           data=json.dumps(body).encode(),  # ASCII: surrogates travel as \udXXX escapes
                           headers={**(case.headers or {}), "content-type": "application/json"})


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
    examples = max(EXAMPLES_PER_OPERATION, 10 * len(strategies))
    if method in ("POST", "PUT", "PATCH"):  # half of the same budget goes to salted bodies
        strategies += [with_surrogates(strategy) for strategy in strategies]
    failures: list[str] = []

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    @given(case=st.one_of(strategies))
    def check(case):
        body = None
        if isinstance(case, tuple):
            case, body = case
            response = send_salted(session, served.url, case, body)
        else:
            body = case.body
            response = case.call(base_url=served.url, session=session, timeout=HTTP_TIMEOUT)
        if response.status_code >= 500:
            failures.append(f"{case.method} {case.formatted_path} body={body!r} "
                            f"query={case.query!r} -> {response.status_code} {response.text[:300]}")

    check()
    assert not failures, "\n".join(failures[:5])
