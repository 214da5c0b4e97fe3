"""`cronwheel local`: the whole system in one process on moto's server.

Same handlers and code paths as on AWS; only the event sources (API Gateway, EventBridge
timers, the SQS event source) are emulated.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from cronwheel import aws_clients
from cronwheel.domain.ids import hash_api_key
from cronwheel.domain.model import Tenant
from cronwheel.runtime import reset_runtime, runtime
from cronwheel.settings import Settings
from cronwheel.store.queues import DISPATCH

from .config import LocalConfig, config_document, development_config, load_config
from .faults import Throttling
from .gateway import Gateway
from .provision import (
    create_dead_events_topic,
    create_long_job_machine,
    create_queues,
    create_tables,
    table_names,
)
from .workers import SqsEventSource, Timer

REGION = "us-east-1"
PREFIX = "cronwheel-local"


def _cheap_transaction_backups() -> None:
    """moto backs up a whole table (a deep copy) for every action of a TransactWriteItems, so
    each transaction costs time proportional to the table's size times its actions. Back up
    only what a transaction can change instead: the table's item index (shallow) and deep
    copies of the items its actions name. Rolling back restores exactly the same state.
    Local emulator speed only; safe because the emulator serves one request at a time."""
    import copy
    from collections import defaultdict

    import moto.dynamodb.models as dynamodb_models
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    backend = dynamodb_models.DynamoDBBackend
    if getattr(backend.transact_write_items, "_cheap_backups", False):
        return
    original = backend.transact_write_items

    def touched_keys(table: Any, transact_items: list[dict[str, Any]]) -> set[tuple[Any, Any]]:
        keys = set()
        for action in transact_items:
            _, op = next(iter(action.items()))
            if op.get("TableName") != table.name:
                continue
            source = op.get("Key") or op.get("Item") or {}
            hash_value = DynamoType(source[table.hash_key_attr])
            range_value = DynamoType(source[table.range_key_attr]) if table.range_key_attr else None
            keys.add((hash_value, range_value))
        return keys

    def backup(table: Any, keys: set[tuple[Any, Any]]) -> Any:
        clone = copy.copy(table)
        clone.items = defaultdict(dict)
        for hash_value, value in table.items.items():
            clone.items[hash_value] = dict(value) if table.range_key_attr else value
        for hash_value, range_value in keys:
            if table.range_key_attr:
                if range_value in table.items.get(hash_value, {}):
                    clone.items[hash_value][range_value] = copy.deepcopy(
                        table.items[hash_value][range_value]
                    )
            elif hash_value in table.items:
                clone.items[hash_value] = copy.deepcopy(table.items[hash_value])
        return clone

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        backups: dict[int, Any] = {}

        class _Backups:
            @staticmethod
            def deepcopy(value: Any, memo: Any = None) -> Any:
                # The module copies items too (old values for conditions and return values).
                if not isinstance(value, Table):
                    return copy.deepcopy(value, memo)
                if id(value) not in backups:
                    backups[id(value)] = backup(value, touched_keys(value, transact_items))
                return backups[id(value)]

        dynamodb_models.copy = _Backups  # type: ignore[assignment]
        try:
            original(self, transact_items)
        finally:
            dynamodb_models.copy = copy  # type: ignore[assignment]

    transact_write_items._cheap_backups = True  # type: ignore[attr-defined]
    backend.transact_write_items = transact_write_items  # type: ignore[method-assign]


class _MotoServer:
    """moto's server, one request at a time: its backends are not safe under concurrent
    writes (a TransactWriteItems deep-copies tables other threads are changing)."""

    def __init__(self, faults: Throttling | None = None) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        # The interpreter logs every Fail state as an error; for long jobs they are outcomes.
        logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
        _cheap_transaction_backups()
        app = DomainDispatcherApplication(create_backend_app)
        lock = threading.Lock()

        def serialized(environ: dict[str, Any], start_response: Any) -> Any:
            injected = faults.intercept(environ, start_response) if faults else None
            if injected is not None:
                return injected
            with lock:
                return list(app(environ, start_response))

        self._server = make_server(
            "127.0.0.1", 0, serialized, threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class LocalStack:
    """Start with `start()` (or as a context manager); `url` is the API's base URL."""

    def __init__(
        self,
        config: LocalConfig,
        host: str = "127.0.0.1",
        port: int = 8080,
        faults: Throttling | None = None,
    ) -> None:
        self.config = config
        self.faults = faults
        self._host = host
        self._port = port
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._saved_env: dict[str, str | None] = {}
        self._moto: _MotoServer | None = None
        self._gateway: Gateway | None = None
        self.endpoint_url = ""
        self.dead_topic_arn: str | None = None  # subscribe here to see dead-execution events
        self.long_job_state_machine_arn: str | None = None  # runs callback and long jobs

    @property
    def url(self) -> str:
        assert self._gateway is not None
        host, port = self._gateway.address
        return f"http://{host}:{port}"

    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> None:
        self._moto = _MotoServer(self.faults)
        self.endpoint_url = self._moto.url
        _post_json(
            f"{self.endpoint_url}/moto-api/config",
            {"stepfunctions": {"execute_state_machine": True}},
        )
        self._export(
            {
                "AWS_ENDPOINT_URL": self.endpoint_url,
                "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION,
                "AWS_ACCESS_KEY_ID": "local",
                "AWS_SECRET_ACCESS_KEY": "local",
                # moto's Step Functions interpreter calls SQS and DynamoDB on this port.
                "MOTO_PORT": self.endpoint_url.rsplit(":", 1)[1],
            }
        )
        # The same retry policy as the handlers: Lambda's event source retries throttling too.
        sqs = aws_clients.client("sqs", REGION, self.endpoint_url)
        dynamodb = aws_clients.client("dynamodb", REGION, self.endpoint_url)
        # moto keeps its state per process, so each stack gets its own names.
        prefix = f"{PREFIX}-{uuid.uuid4().hex[:6]}"
        names = table_names(prefix)
        create_tables(dynamodb, names)
        queue_urls = create_queues(sqs, prefix)
        self.dead_topic_arn = create_dead_events_topic(
            aws_clients.client("sns", REGION, self.endpoint_url), prefix
        )
        self.long_job_state_machine_arn = create_long_job_machine(
            aws_clients.client("stepfunctions", REGION, self.endpoint_url),
            prefix,
            queue_urls["dispatch"],
            names,
        )
        self._set_env(names, queue_urls["dispatch"])
        self._seed_tenants()

        # Imported only now: handlers build their runtime from the environment set above.
        from functions.api import authorizer as authorizer_fn
        from functions.api import handler as api_fn
        from functions.dispatch import handler as dispatch_fn
        from functions.sweeper import handler as sweeper_fn
        from functions.tick import handler as tick_fn

        self._gateway = Gateway(self._host, self._port, api_fn.handler, authorizer_fn.handler)
        self._gateway.start()
        shards = [{"shard": k} for k in range(self.config.shards)]
        self._threads = [
            Timer(
                "cronwheel-tick", self.config.tick_interval_s, tick_fn.handler, shards, self._stop
            ),
            Timer(
                "cronwheel-sweeper",
                self.config.sweep_interval_s,
                sweeper_fn.handler,
                [{}],
                self._stop,
            ),
        ]
        self._threads += SqsEventSource(
            sqs, queue_urls["dispatch"], dispatch_fn.handler, self.config.dispatchers, self._stop
        ).threads
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        if self._gateway is not None:
            self._gateway.stop()
        if self._moto is not None:
            self._moto.stop()
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reset_runtime()

    def _set_env(self, names: dict[str, str], dispatch_url: str) -> None:
        env = Settings.environment(
            stage="local",
            table_names=names,
            dispatch_queue_url=dispatch_url,
            shards=self.config.shards,
            lookahead_s=self.config.lookahead_s,
            allow_private_egress=True,
            dead_letter_topic_arn=self.dead_topic_arn,
            long_job_state_machine_arn=self.long_job_state_machine_arn,
        )
        env.update(
            {
                "CRONWHEEL_DELIVERY_GRACE_S": str(self.config.delivery_grace_s),
                "CRONWHEEL_DISPATCH_RATE_PER_S": str(self.config.dispatch_rate_per_s),
                "CRONWHEEL_SHARD_LEASE_S": str(max(5, int(self.config.tick_interval_s * 5))),
                "POWERTOOLS_LOG_LEVEL": os.environ.get("CRONWHEEL_LOG_LEVEL", "WARNING"),
                "POWERTOOLS_METRICS_NAMESPACE": "cronwheel",
                "POWERTOOLS_TRACE_DISABLED": "true",
                # EMF lines are for CloudWatch; locally they only bury the demo's output.
                "POWERTOOLS_METRICS_DISABLED": (
                    "false" if os.environ.get("CRONWHEEL_LOCAL_METRICS") == "1" else "true"
                ),
            }
        )
        self._export(env)
        reset_runtime()

    def _export(self, env: dict[str, str]) -> None:
        for name, value in env.items():
            self._saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def _seed_tenants(self) -> None:
        store = runtime().store
        now = datetime.now(UTC)
        for tenant in self.config.tenants:
            store.put_tenant(
                Tenant(
                    id=tenant.id,
                    signing_secrets=[tenant.signing_secret],
                    max_concurrency=tenant.max_concurrency,
                )
            )
            for key in tenant.api_keys:
                digest = hash_api_key(key.key)
                store.put_api_key(
                    tenant=tenant.id,
                    key_hash=digest,
                    key_id=f"key_{digest[:10]}",
                    role=key.role,
                    now=now,
                )


def _post_json(url: str, document: dict[str, Any]) -> None:
    request = urllib.request.Request(
        url,
        data=json.dumps(document).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


def serve(
    host: str = "127.0.0.1", port: int = 8080, config_path: str | None = None, demo: bool = False
) -> int:
    """Run the local stack until SIGINT or SIGTERM. Without a config, write a development one."""
    if config_path:
        config = load_config(config_path)
        admin_key = next(
            (k.key for t in config.tenants for k in t.api_keys if k.role.value == "admin"), None
        )
    else:
        config, admin_key = development_config()
        path = Path(".cronwheel-local.json")
        path.write_text(json.dumps(config_document(config), indent=2))
        print(f"wrote development config to {path}")
    stopping = threading.Event()

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    with LocalStack(config, host, port) as stack:
        print(f"cronwheel local stack is up at {stack.url}")
        # Where to create Secrets Manager secrets that target headers reference.
        print(f"  AWS emulator (DynamoDB, SQS, Secrets Manager) at {stack.endpoint_url}")
        if admin_key:
            print(f"  export CRONWHEEL_URL={stack.url}")
            print(f"  export CRONWHEEL_API_KEY={admin_key}")
        print(
            "  dead letters: cronwheel dlq list"
            f" --endpoint-url {stack.endpoint_url} --queue-url {os.environ[DISPATCH.env_var]}"
        )
        if demo and admin_key:
            from .demo import run_demo

            run_demo(stack.url, admin_key, config.tenants[0].signing_secret)
        print("press Ctrl-C to stop")
        while not stopping.wait(0.5):
            pass
        print("stopping")
    time.sleep(0)
    return 0
