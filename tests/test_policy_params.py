"""Policy hyper-parameters are typed and bounded by each constructor's signature."""

from __future__ import annotations

import math

import pytest

from scheduling.params import param_specs, policies_errors, policy_errors
from scheduling.registry import POLICIES, make_policy


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_parameter_of_every_policy_has_a_checked_type(name: str) -> None:
    for spec in param_specs(POLICIES[name]):
        assert spec.kind != "any", f"{name}.{spec.name}: annotate it with a type we can check"
        default = list(spec.default) if isinstance(spec.default, tuple) else spec.default
        spec.check(default)  # the default passes its own check


@pytest.mark.parametrize(
    ("name", "params", "where", "says"),
    [
        ("las", {"quantum_s": "<img src=x onerror=alert(1)>"}, "quantum_s", "must be a number"),
        ("las", {"quantum_s": True}, "quantum_s", "must be a number"),
        ("las", {"quantum_s": math.inf}, "quantum_s", "finite"),
        ("las", {"quantum_s": math.nan}, "quantum_s", "finite"),
        ("las", {"quantum_s": 10**400}, "quantum_s", "finite"),
        ("las", {"quantum_s": 0}, "quantum_s", "must be positive"),
        ("las", {"quantum_s": -5.0}, "quantum_s", "must be positive"),
        ("las", {"quantum_s": None}, "quantum_s", "not null"),
        (
            "las",
            {"quantum": 60},
            "quantum",
            "las takes no parameter 'quantum'; it takes: quantum_s",
        ),
        ("sjf", {"x": 1}, "x", "sjf takes no parameters (got 'x')"),
        ("fifo", {"backfill": "yes"}, "backfill", "true or false"),
        ("fifo", {"backfill": 1}, "backfill", "true or false"),
        ("tiresias", {"thresholds": 5}, "thresholds", "a list of numbers"),
        ("tiresias", {"thresholds": [100, "x"]}, "thresholds", "item 1 must be a number"),
        ("tiresias", {"thresholds": [-1, 5]}, "thresholds", "item 0 must be positive"),
        ("tiresias", {"promote_knob": 0}, "promote_knob", "must be positive"),
        ("tiresias", {"timing": "fast"}, "timing", "one of exact, simulator, simulator-py2"),
        ("tiresias", {"timing": 1}, "timing", "must be a string"),
        ("gavel-fifo", {"seed": 1.5}, "seed", "an integer"),
        ("gavel-fifo", {"seed": 2**64}, "seed", "within"),
        ("gavel-fifo", {"reset_interval_s": -1}, "reset_interval_s", "zero or positive"),
        ("gavel-las", {"round_s": "360"}, "round_s", "must be a number"),
    ],
)
def test_a_bad_parameter_is_named_with_the_reason(
    name: str, params: dict[str, object], where: str, says: str
) -> None:
    errors = policy_errors(name, params, "policies[2]")
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"policies[2].params.{where}: "), errors
    assert says in errors[0]
    assert len(errors[0]) < 200  # a huge value is not echoed whole


def test_a_rule_across_parameters_is_the_constructors() -> None:
    (error,) = policy_errors("tiresias", {"thresholds": [500, 100]}, "policies[0]")
    assert error.startswith("policies[0].params: ") and "ascending" in error


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("fifo", {}),
        ("fifo", {"backfill": True}),
        ("las", {"quantum_s": 600}),
        ("las", {"quantum_s": 0.5}),
        ("tiresias", {"thresholds": [1000, 5000.5], "promote_knob": None, "timing": "simulator"}),
        ("tiresias", {"promote_knob": 2}),
        ("gavel-fifo", {"seed": 3.0, "round_s": 60, "reset_interval_s": 0}),
        ("sjf", None),
    ],
)
def test_good_parameters_pass(name: str, params: dict[str, object] | None) -> None:
    assert policy_errors(name, params, "policies[0]") == []


def test_every_item_of_a_list_is_checked() -> None:
    errors = policies_errors(
        [{"name": "fifo"}, "las", {"name": "nope"}, {"name": "las", "params": [1]}]
    )
    assert errors == [
        "policies[1]: must be an object with a name and params",
        "policies[2].name: unknown policy 'nope'; known: " + ", ".join(sorted(POLICIES)),
        "policies[3].params: must be an object of parameter values, got [1]",
    ]


@pytest.mark.parametrize(
    ("name", "params", "says"),
    [
        ("fifo", {"nonsense": 1}, "fifo takes no parameter 'nonsense'; it takes: backfill"),
        ("sjf", {"x": 1}, "sjf takes no parameters (got 'x')"),
        (
            "las",
            {"quantum": 1, "q": 2},
            "las takes no parameters 'quantum', 'q'; it takes: quantum_s",
        ),
    ],
)
def test_making_a_policy_names_the_parameters_it_does_not_take(
    name: str, params: dict[str, object], says: str
) -> None:
    with pytest.raises(ValueError) as info:
        make_policy(name, **params)
    assert str(info.value) == says  # not Python's "__init__() got an unexpected keyword"
