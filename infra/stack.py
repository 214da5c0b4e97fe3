"""The cronwheel stack: it only composes the constructs, one per concern."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Environment, Stack, Tags
from constructs import Construct

from cronwheel.store.queues import DISPATCH
from infra.api import Api
from infra.archive import HistoryArchive
from infra.config import StageSettings
from infra.data import Data
from infra.functions import Functions
from infra.layers import Layers
from infra.long_jobs import LongJobs
from infra.observability import Observability
from infra.queues import Queues
from infra.ticking import Ticking


class CronwheelStack(Stack):
    def __init__(self, scope: Construct, settings: StageSettings, **kwargs: Any) -> None:
        env = (
            Environment(account=settings.account, region=settings.region)
            if settings.account or settings.region
            else None
        )
        super().__init__(
            scope,
            settings.stack_name,
            env=env,
            description=f"cronwheel multi-tenant job scheduler ({settings.name})",
            termination_protection=settings.protect_data,
            **kwargs,
        )
        self.settings = settings
        Tags.of(self).add("project", "cronwheel")
        Tags.of(self).add("stage", settings.name)

        self.data = Data(self, "Data", settings=settings)
        self.archive = HistoryArchive(
            self, "HistoryArchive", settings=settings, executions=self.data.executions
        )
        self.queues = Queues(self, "Queues", settings=settings)
        self.layers = Layers(self, "Layers")
        self.long_jobs = LongJobs(
            self,
            "LongJobs",
            settings=settings,
            executions=self.data.executions,
            dispatch_queue=self.queues.dispatch,
        )
        self.functions = Functions(
            self,
            "Functions",
            settings=settings,
            data=self.data,
            queues=self.queues,
            layers=self.layers,
            long_jobs=self.long_jobs,
        )
        self.api = Api(self, "Api", settings=settings, functions=self.functions)
        self.ticking = Ticking(self, "Ticking", settings=settings, functions=self.functions)
        self.observability = Observability(
            self,
            "Observability",
            settings=settings,
            functions=self.functions,
            dispatch_queue=self.queues.dispatch,
            dead_letter_queues=[
                (DISPATCH.logical_name, self.queues.dispatch_dlq),
                ("history-archive", self.archive.dead_letter_queue),
            ],
        )

        CfnOutput(self, "ApiUrl", value=self.api.url, description="Base URL; routes under v1/")
        CfnOutput(self, "AlarmTopicArn", value=self.observability.topic.topic_arn)
        CfnOutput(
            self,
            "DeadExecutionsTopicArn",
            value=self.queues.dead_executions.topic_arn,
            description="Dead-execution events; subscribe with a filter policy on `tenant`",
        )
        CfnOutput(self, "ArchiveBucketName", value=self.archive.bucket.bucket_name)
        CfnOutput(
            self,
            "TenantsTableName",
            value=self.data.tables["tenants"].table_name,
            description="Seed the first tenant here (docs/deploy.md)",
        )
        CfnOutput(
            self,
            "ApiKeysTableName",
            value=self.data.tables["api_keys"].table_name,
            description="Seed the first API key here (docs/deploy.md)",
        )
