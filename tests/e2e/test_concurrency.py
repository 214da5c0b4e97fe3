"""A tenant's max_concurrency holds across all dispatchers; work over it waits, it is not lost."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.support.api import Api
from tests.support.target import RecordingTarget, wait_for


def test_max_concurrency_three_with_thirty_one_second_jobs(
    api: Api, target: RecordingTarget
) -> None:
    # Given a tenant limited to 3 concurrent executions and 30 jobs whose target takes 1 s,
    # dispatched by the local stack's 4 parallel dispatchers
    initech = api.as_key("initech-operator-key")
    body = {"target": {"type": "http", "url": f"{target.base_url}/slow/1", "timeout_s": 10}}
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda _: initech.post("/v1/jobs", body), range(30)))
    assert all(status == 201 for status, _ in answers)
    ids = [job["execution_id"] for _, job in answers]

    # When they all run
    def all_ended() -> bool:
        return all(
            initech.get(f"/v1/executions/{i}")[1]["state"] in ("succeeded", "dead") for i in ids
        )

    wait_for(all_ended, timeout_s=90, interval_s=1)

    # Then the target never saw more than 3 at once, and every job succeeded on its first attempt
    assert target.max_in_flight["initech"] <= 3
    assert target.max_in_flight["initech"] >= 2  # the limit, not the dispatchers, was the bound
    for execution_id in ids:
        execution = initech.get(f"/v1/executions/{execution_id}")[1]
        assert (execution["state"], execution["attempt"]) == ("succeeded", 1)
    # And the slots are all given back
    assert initech.get("/v1/tenant")[1]["usage"]["running"] == 0
