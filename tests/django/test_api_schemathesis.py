"""Schemathesis against the committed schema (``docs/api-schema.yaml``), in-process over WSGI.

Every operation of the schema gets up to 20 generated requests per phase (explicit examples,
boundary coverage, random fuzzing; positive and negative data), sent with the owner's token
to the Django app in this process (test settings, in-memory database holding one finished
experiment, so that ids 1 exist). Each answer must pass every Schemathesis check: no server
error; a status code, content type, headers and body the schema documents for it; a request
that violates the schema refused (4xx); a request that follows it accepted.

Bounded and reproducible: 20 examples an operation, derandomised (the same cases every run),
no shrinking; about 20 s on two cores.

The last check, "a schema-valid request is accepted", is left out for the operations below:
what makes their input valid is more than a JSON schema can say (the reason is given for
each), and they answer 400 naming the field for such input. Every other check runs on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS

from tests.django.conftest import ROOT

#: operation → why a request that follows the schema may still be refused (400)
BEYOND_THE_SCHEMA = {
    "POST /api/v1/clusters/": "the spec is checked by the simulator (pools, racks, types)",
    "PUT /api/v1/clusters/{id}/": "the spec is checked by the simulator",
    "PATCH /api/v1/clusters/{id}/": "the spec is checked by the simulator",
    "POST /api/v1/clusters/import/": "the node list is parsed (kubectl, Slurm, Alibaba CSVs)",
    "POST /api/v1/clusters/{id}/clone/": "an edited spec is checked by the simulator",
    "POST /api/v1/clusters/{id}/what-if/": "each operation takes its own parameters; types, "
    "pools and regions must exist, devices fill whole nodes",
    "POST /api/v1/experiments/": "clusters and workloads must be yours and parsed, the grid "
    "at most CLUSTERSIM_MAX_RUNS_PER_EXPERIMENT runs, parameters as each policy takes them",
    "POST /api/v1/workloads/synthetic/": "the recipe is checked field by field (planner.recipes)",
    "POST /api/v1/workloads/{id}/derive/": "the steps are checked one by one; the parent must "
    "be parsed",
    "POST /api/v1/studies/": "the workload and base cluster must be yours and parsed; the "
    "problem is checked by the advisor (types, metrics, contradictory constraints, budgets)",
    "POST /api/v1/accelerators/": "idle_w may not exceed busy_w",
    "PUT /api/v1/accelerators/{id}/": "idle_w may not exceed busy_w",
    "PATCH /api/v1/accelerators/{id}/": "idle_w may not exceed busy_w",
}

schema = schemathesis.openapi.from_path(ROOT / "docs/api-schema.yaml")
schema.app = WSGIHandler()
schema.config.generation.update(
    max_examples=20,
    deterministic=True,
    no_shrink=True,
    allow_x00=False,  # a NUL in a text field is refused (DRF): not a schema mismatch worth one
)
POSITIVE_ACCEPTANCE = CHECKS.get_by_names(["positive_data_acceptance"])
NEGATIVE_REJECTION = CHECKS.get_by_names(["negative_data_rejection"])


def _blurred_by_the_form(case: Any) -> bool:
    """A randomly mutated (fuzzing phase) negative multipart body. Its mutations mix ones a
    form erases (a field's JSON type: every form field is text, the number 7 is the text "7";
    null: a null field is not sent, as if left out) with others, so a 2xx answer says nothing.
    The coverage phase's negative forms, one precise violation each (a required field left
    out, a value outside its enum, a text too long, ...), are still checked."""
    data = case.meta.phase.data if case.meta else None
    return bool(case.media_type == "multipart/form-data" and getattr(data, "mutations", None))


@pytest.fixture
def token(owner: Any, make_experiment: Any, finish: Any) -> Iterator[str]:
    """The owner's token, with a finished experiment (ids 1 exist); the database connection
    stays open across the generated requests (as the test client keeps it)."""
    from rest_framework.authtoken.models import Token

    finish(make_experiment(owner))
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield Token.objects.get_or_create(user=owner)[0].key
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def test_the_exceptions_name_operations_of_the_schema() -> None:
    names = {
        f"{op.method.upper()} {op.path}"
        for op in (result.ok() for result in schema.get_all_operations())
    }
    assert set(BEYOND_THE_SCHEMA) <= names


@pytest.mark.slow
@pytest.mark.django_db
@schema.parametrize()
@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)
def test_the_api_keeps_to_its_schema(case: Any, token: str) -> None:
    label = f"{case.operation.method.upper()} {case.operation.path}"
    excluded = POSITIVE_ACCEPTANCE if label in BEYOND_THE_SCHEMA else []
    if _blurred_by_the_form(case):
        excluded = [*excluded, *NEGATIVE_REJECTION]
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, excluded_checks=excluded)
