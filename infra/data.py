"""Data: the DynamoDB tables, built from the specs in `cronwheel.store.tables` (defined once)."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from cronwheel.store.tables import ALL_TABLES, EXECUTIONS, Key, TableSpec
from infra.config import StageSettings

_ATTRIBUTE_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
}


def _attribute(key: Key) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=_ATTRIBUTE_TYPES[key.type])


class Data(Construct):
    """Every table of `ALL_TABLES`: on demand, encrypted, PITR; protected and retained when the
    stage says so. The executions table streams its old images so expired history can be
    archived (see `archive.py`)."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self.tables: dict[str, dynamodb.Table] = {
            spec.logical_name: self._build_table(spec) for spec in ALL_TABLES
        }

    @property
    def executions(self) -> dynamodb.Table:
        return self.tables[EXECUTIONS.logical_name]

    def table_names(self) -> Mapping[str, str]:
        return {name: table.table_name for name, table in self.tables.items()}

    def _build_table(self, spec: TableSpec) -> dynamodb.Table:
        protect = self._settings.protect_data
        table = dynamodb.Table(
            self,
            _construct_id(spec),
            partition_key=_attribute(spec.hash_key),
            sort_key=_attribute(spec.range_key) if spec.range_key else None,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=protect,
            removal_policy=RemovalPolicy.RETAIN if protect else RemovalPolicy.DESTROY,
            time_to_live_attribute=spec.ttl_attribute,
            # Only the executions table feeds the archive; the pipe needs the deleted item.
            stream=dynamodb.StreamViewType.OLD_IMAGE if spec is EXECUTIONS else None,
        )
        for index in spec.indexes:
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_attribute(index.hash_key),
                sort_key=_attribute(index.range_key) if index.range_key else None,
                projection_type=dynamodb.ProjectionType.ALL,
            )
        return table


def _construct_id(spec: TableSpec) -> str:
    return "".join(part.capitalize() for part in spec.logical_name.split("_")) + "Table"
