"""Property tests of the API's OpenAPI document with schemathesis, in
process (the app over a real LanceDB, through ASGI): every operation,
generated inputs (bounded), no 5xx and every response as the document says
(status, content type, body schema: the service's views)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from episodic.adapters.embedded import Memory
from episodic.adapters.http.app import create_app
from episodic.adapters.http.limits import BodyLimit
from tests.integration.api_support import api_client, new_key
from tests.integration.helpers import settings_at

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    with Memory(settings_at(tmp_path_factory.mktemp("schemathesis") / "home")) as memory:
        key = new_key(memory, "fuzz-user")
        with api_client(memory, key) as c:  # something to read back
            turns = [{"role": "user", "text": f"turn {i} about helm deploys"} for i in range(30)]
            assert c.post("/v1/turns", json={"turns": turns}).status_code == 200
            assert c.post("/v1/consolidate").status_code == 200
        yield BodyLimit(create_app(memory)), key


def test_api_conforms(served: tuple[Any, str]) -> None:
    """Each operation of the document in turn (schemathesis' pytest plugin
    does not load under this pytest; its strategies and checks do)."""
    app, key = served
    api = schemathesis.openapi.from_asgi("/openapi.json", app)
    seen: list[str] = []
    for result in api.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
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
        def run(case: schemathesis.Case[Any]) -> None:
            case.call_and_validate(headers={"Authorization": f"Bearer {key}"}, checks=CHECKS)

        run()
    assert len(seen) >= 10, seen
