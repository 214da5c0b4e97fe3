"""Egress policy for HTTP targets: no loopback, link-local (instance metadata included),
private or otherwise non-public addresses unless the stage allows them."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from cronwheel.errors import InvalidArgument

Resolver = Callable[[str], list[str]]


def resolve(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as error:
        raise InvalidArgument(
            f"target host {host!r} does not resolve: {error.strerror}", field="target.url"
        ) from None
    return sorted({str(info[4][0]) for info in infos})


def _why_refused(address: str) -> str | None:
    ip = ipaddress.ip_address(address)
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local (this includes the instance metadata service)"
    if ip.is_private:
        return "private"
    if ip.is_unspecified or ip.is_multicast or ip.is_reserved:
        return "not a public unicast"
    return None


def check_http_egress(url: str, *, allow_private: bool, resolver: Resolver = resolve) -> None:
    """Raise InvalidArgument (field target.url) when the URL's host resolves to an address this
    stage may not call. Checked when a target is saved and again before each call."""
    if allow_private:
        return
    host = urlsplit(url).hostname or ""
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        addresses = resolver(host)
    for address in addresses:
        reason = _why_refused(address)
        if reason is not None:
            raise InvalidArgument(
                f"target {host} resolves to {address}, a {reason} address; this stage does not "
                "allow private egress",
                field="target.url",
            )
