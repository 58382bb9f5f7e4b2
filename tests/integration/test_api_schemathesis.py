"""Property tests of the served OpenAPI document with schemathesis: every
operation, generated inputs (bounded), no 5xx and every response as the
document says (status, content type, body schema)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.integration.api_support import Server, api_server

pytestmark = pytest.mark.slow
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    with api_server(tmp_path_factory.mktemp("schemathesis-home")) as srv:
        key = srv.key("fuzz-user")
        with srv.client(key) as c:  # something to read back
            turns = [{"role": "user", "text": f"turn {i} about helm deploys"} for i in range(30)]
            assert c.post("/v1/turns", json={"turns": turns}).status_code == 200
        yield srv, key


def test_api_conforms(served: tuple[Server, str]) -> None:
    """Each operation of the served document in turn (schemathesis' pytest
    plugin does not load under this pytest; its strategies and checks do)."""
    srv, key = served
    api = schemathesis.openapi.from_url(srv.url + "/openapi.json")
    seen: list[str] = []
    for result in api.get_all_operations():
        op = result.ok()
        seen.append(op.label)

        @given(case=op.as_strategy())
        @settings(
            max_examples=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def run(case: schemathesis.Case) -> None:
            case.call_and_validate(
                headers={"Authorization": f"Bearer {key}"}, checks=CHECKS, timeout=120
            )

        run()
    assert len(seen) >= 9, seen
