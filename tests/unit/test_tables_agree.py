"""The table keys are defined once (tables.py); the PynamoDB models and the local stack agree."""

from __future__ import annotations

import pytest

from cronwheel.store.models import ALL_MODELS
from cronwheel.store.tables import ALL_TABLES, TableSpec
from cronwheel_local.provision import create_table_request


def _spec_of(model: type) -> TableSpec:
    spec: TableSpec = model.Meta.spec  # type: ignore[attr-defined]
    return spec


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda m: m.__name__)
def test_model_keys_and_indexes_match_the_spec(model: type) -> None:
    spec = _spec_of(model)
    schema = model._get_schema()  # type: ignore[attr-defined]
    keys = {k["AttributeName"]: k["KeyType"] for k in schema["key_schema"]}
    expected = {spec.hash_key.name: "HASH"}
    if spec.range_key:
        expected[spec.range_key.name] = "RANGE"
    assert keys == expected

    indexes = {
        i["index_name"]: {k["AttributeName"]: k["KeyType"] for k in i["key_schema"]}
        for i in schema["global_secondary_indexes"]
    }
    assert indexes == {
        i.name: {i.hash_key.name: "HASH", **({i.range_key.name: "RANGE"} if i.range_key else {})}
        for i in spec.indexes
    }
    types = {a["AttributeName"]: a["AttributeType"] for a in schema["attribute_definitions"]}
    assert types == spec.attribute_definitions()


def test_every_table_has_a_model() -> None:
    # A table may hold more than one kind of item (leases also holds target rate buckets).
    assert {_spec_of(m).logical_name for m in ALL_MODELS} == {t.logical_name for t in ALL_TABLES}


@pytest.mark.parametrize("spec", ALL_TABLES, ids=lambda s: s.logical_name)
def test_local_stack_creates_tables_from_the_spec(spec: TableSpec) -> None:
    request = create_table_request(spec, "t")
    assert request["KeySchema"][0] == {"AttributeName": spec.hash_key.name, "KeyType": "HASH"}
    assert [i["IndexName"] for i in request.get("GlobalSecondaryIndexes", [])] == [
        i.name for i in spec.indexes
    ]
