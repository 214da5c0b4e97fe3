"""Long jobs: the Standard state machine that drives callback and long jobs.

Its definition is `cronwheel.long_job_machine`, the very document the local stack runs in
moto's interpreter, so what is tested locally is what deploys. The machine hands each attempt
to the dispatcher through the dispatch queue (`sqs:sendMessage.waitForTaskToken`) and, when an
attempt loses its heartbeat or times out, expires its lease with one conditional
`dynamodb:UpdateItem` on the executions table; its role may do exactly those two things.
"""

from __future__ import annotations

import json

from aws_cdk import CfnResource, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from cronwheel.long_job_machine import long_job_definition
from infra.config import StageSettings
from infra.nag import acknowledge


class LongJobs(Construct):
    """The long-job state machine (logged, traced) and the grants to run it."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        executions: dynamodb.ITable,
        dispatch_queue: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        name = settings.resource_name("long-jobs")
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            # Step Functions' vended logs: this prefix keeps the account's log resource policy
            # from growing with every state machine.
            log_group_name=f"/aws/vendedlogs/states/{name}",
            retention=settings.log_retention,
            removal_policy=RemovalPolicy.RETAIN if settings.protect_data else RemovalPolicy.DESTROY,
        )
        definition = long_job_definition(
            dispatch_queue_url=dispatch_queue.queue_url,
            executions_table=executions.table_name,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            # json.dumps, not Stack.to_json_string: that one drops nulls, and `"ResultPath":
            # null` means "discard the result". The queue URL and table name are tokens inside
            # the string; they resolve to an Fn::Join.
            definition_body=sfn.DefinitionBody.from_string(json.dumps(definition)),
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL),
            tracing_enabled=True,
        )
        dispatch_queue.grant_send_messages(self.state_machine)
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["dynamodb:UpdateItem"], resources=[executions.table_arn])
        )
        self._depend_on_policy_only()
        acknowledge(
            self.state_machine,
            "AwsSolutions-IAM5[Resource::*]",
            "Step Functions delivers logs (logs:CreateLogDelivery and the other log-delivery "
            "actions) and X-Ray traces through APIs that support no resource-level "
            "permissions, so AWS requires Resource '*' for them.",
        )

    def _depend_on_policy_only(self) -> None:
        """The machine references its role already (`Fn::GetAtt`); CDK's explicit edge to the
        role is redundant (cfn-lint W3005). Keep the edge to the policy it needs to start."""
        policy = self.state_machine.role.node.find_child("DefaultPolicy").node.default_child
        cfn_machine = self.state_machine.node.default_child
        assert isinstance(policy, CfnResource) and isinstance(cfn_machine, CfnResource)
        cfn_machine.add_override("DependsOn", [Stack.of(self).get_logical_id(policy)])

    @property
    def state_machine_arn(self) -> str:
        return self.state_machine.state_machine_arn

    def grant_run(self, role: iam.IRole) -> None:
        """Start the machine (the dispatcher) and report on its tasks (dispatcher and API)."""
        self.state_machine.grant_start_execution(role)
        self.state_machine.grant_task_response(role)
