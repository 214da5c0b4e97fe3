"""Data: the tables are exactly the specs of `cronwheel.store.tables`, and prod keeps them safe."""

from __future__ import annotations

from typing import Any

import pytest

from cronwheel.store.tables import ALL_TABLES, EXECUTIONS, Key, TableSpec
from tests.infra.template_helpers import function_named, ref_or_att, resources

pytestmark = pytest.mark.infra


def _key_schema(hash_key: Key, range_key: Key | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": hash_key.name, "KeyType": "HASH"}]
    if range_key is not None:
        schema.append({"AttributeName": range_key.name, "KeyType": "RANGE"})
    return schema


def _table_id(template: dict[str, Any], spec: TableSpec) -> str:
    """The table the functions are told to use for `spec` (via its environment variable)."""
    environment = function_named(template, "api")["Properties"]["Environment"]["Variables"]
    logical_id = ref_or_att(environment[spec.env_var])
    assert logical_id is not None, f"{spec.env_var} must reference a table of this stack"
    assert template["Resources"][logical_id]["Type"] == "AWS::DynamoDB::Table"
    return logical_id


def _table_of(template: dict[str, Any], spec: TableSpec) -> dict[str, Any]:
    return dict(template["Resources"][_table_id(template, spec)])


def test_every_spec_has_exactly_one_table(template: dict[str, Any]) -> None:
    # Given the synthesized stage / When its tables are counted
    tables = resources(template, "AWS::DynamoDB::Table")
    # Then there is one table per spec, each reached through its spec's environment variable
    assert len(tables) == len(ALL_TABLES)
    assert {_table_id(template, spec) for spec in ALL_TABLES} == set(tables)


@pytest.mark.parametrize("spec", ALL_TABLES, ids=lambda spec: spec.logical_name)
def test_table_keys_and_indexes_equal_the_spec(template: dict[str, Any], spec: TableSpec) -> None:
    # Given the spec of one table / When the synthesized table is read
    properties = _table_of(template, spec)["Properties"]

    # Then its keys, attribute types and global secondary indexes are the spec's, nothing more
    assert properties["KeySchema"] == _key_schema(spec.hash_key, spec.range_key)
    assert {
        attribute["AttributeName"]: attribute["AttributeType"]
        for attribute in properties["AttributeDefinitions"]
    } == spec.attribute_definitions()
    indexes = {
        index["IndexName"]: index["KeySchema"]
        for index in properties.get("GlobalSecondaryIndexes", [])
    }
    assert indexes == {
        index.name: _key_schema(index.hash_key, index.range_key) for index in spec.indexes
    }
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["SSESpecification"]["SSEEnabled"] is True


@pytest.mark.parametrize("spec", ALL_TABLES, ids=lambda spec: spec.logical_name)
def test_table_ttl_follows_the_spec(template: dict[str, Any], spec: TableSpec) -> None:
    # Given a spec / When its table's TTL is read
    ttl = _table_of(template, spec)["Properties"].get("TimeToLiveSpecification")
    # Then TTL is on exactly where the spec names an attribute (executions: expires_at)
    if spec.ttl_attribute is None:
        assert ttl is None
    else:
        assert ttl == {"AttributeName": spec.ttl_attribute, "Enabled": True}
    assert EXECUTIONS.ttl_attribute == "expires_at"


@pytest.mark.parametrize("spec", ALL_TABLES, ids=lambda spec: spec.logical_name)
def test_prod_tables_have_pitr_deletion_protection_and_are_retained(
    prod: dict[str, Any], spec: TableSpec
) -> None:
    # Given the prod stage / When a table is read
    table = _table_of(prod, spec)
    properties = table["Properties"]
    # Then it is recoverable to a point in time, cannot be deleted by accident, and a stack
    # deletion leaves it in place
    assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert properties["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"


def test_dev_tables_can_be_torn_down(synthesized: Any) -> None:
    # Given the dev stage / When its tables are read
    tables = resources(synthesized.templates["dev"], "AWS::DynamoDB::Table").values()
    # Then `cdk destroy` removes them (no deletion protection, delete policy)
    for table in tables:
        assert table["Properties"].get("DeletionProtectionEnabled") in (None, False)
        assert table["DeletionPolicy"] == "Delete"
