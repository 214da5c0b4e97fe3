"""HTTP targets may not reach loopback, link-local or private addresses unless the stage allows."""

from __future__ import annotations

import pytest

from cronwheel.domain.egress import check_http_egress
from cronwheel.errors import InvalidArgument

NAMES = {
    "localhost.example": ["127.0.0.1"],
    "api.example": ["93.184.216.34"],
    "mixed.example": ["93.184.216.34", "10.1.2.3"],
}


def _resolver(host: str) -> list[str]:
    return NAMES[host]


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        pytest.param(
            "http://169.254.169.254/latest/meta-data/", "link-local", id="instance_metadata"
        ),
        pytest.param("http://10.0.0.1/hook", "private", id="rfc1918"),
        pytest.param("https://localhost.example/hook", "loopback", id="name_resolving_to_loopback"),
        pytest.param("http://[::1]:8080/", "loopback", id="ipv6_loopback"),
        pytest.param("http://[fd00::1]/", "private", id="ipv6_unique_local"),
        pytest.param("https://mixed.example/", "private", id="any_private_address_of_a_name"),
        pytest.param("http://0.0.0.0/", "private", id="unspecified"),
    ],
)
def test_non_public_targets_are_refused_with_a_clear_message(url: str, kind: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        check_http_egress(url, allow_private=False, resolver=_resolver)
    assert refused.value.field == "target.url"
    assert (
        kind in refused.value.message and "does not allow private egress" in refused.value.message
    )


def test_public_targets_pass_and_a_stage_may_allow_private_egress() -> None:
    check_http_egress("https://api.example/hook", allow_private=False, resolver=_resolver)
    check_http_egress("http://10.0.0.1/hook", allow_private=True, resolver=_resolver)
