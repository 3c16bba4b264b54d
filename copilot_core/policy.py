"""The operator's policy: per GNS3 user or group, how far the copilot may go.

An :class:`OperatorPolicy` (read from a settings file or the environment) has rules: one
``default``, one per GNS3 group, one per GNS3 username. Each rule may say

* ``max_mode`` — the highest copilot mode (``teaching_assistant`` <
  ``lab_automation_assistant``);
* ``min_approval`` — the least approval setting (``never`` < ``changes`` < ``always``);
* ``llm_endpoints`` — the hosts (names or addresses) and networks (CIDR) a user may point
  their LLM settings at.

A user's :class:`UserLimits` take each field from their own rule when it sets it, else
the most restrictive of the rules of their groups that set it, else the default (which,
unset, allows everything). :class:`PolicyBook` looks them up (once per request) with the
user's groups from a :class:`GroupDirectory`, remembered briefly.
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from copilot_core._approvals import ApprovalPolicy
from copilot_core._limits import APPROVAL_ORDER, MODE_ORDER, UNLIMITED, UserLimits
from copilot_core._model_settings import EndpointCheck, ModelSettings, ModelSettingsStore
from copilot_core._session import CopilotMode
from copilot_core.errors import PermissionDeniedError
from copilot_core.ports import Principal

__all__ = [
    "APPROVAL_ORDER",
    "MODE_ORDER",
    "UNLIMITED",
    "EndpointCheck",
    "GroupDirectory",
    "HostResolver",
    "ModelSettings",
    "ModelSettingsStore",
    "OperatorPolicy",
    "PolicyBook",
    "PolicyRule",
    "UserLimits",
    "check_llm_endpoint",
]

_HOST = re.compile(
    r"^(?=.{1,253}$)(?:\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$"
)


def _endpoint(value: str) -> str:
    """A host name (``*.example.org`` for its subdomains), an address or a CIDR network,
    normalised; ValueError otherwise."""
    text = value.strip().lower().rstrip(".")
    if not text:
        raise ValueError("an LLM endpoint entry is empty")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        pass
    if not _HOST.match(text):
        raise ValueError(
            f"{value!r} is neither a host name, an IP address nor a CIDR network "
            "(e.g. api.openai.com, *.lab.example, 10.20.0.5, 10.20.0.0/16)"
        )
    return text


class PolicyRule(BaseModel):
    """What one rule of the policy says; a field left out says nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_mode: CopilotMode | None = Field(
        default=None, description="The highest copilot mode allowed."
    )
    min_approval: ApprovalPolicy | None = Field(
        default=None, description="The least approval setting allowed."
    )
    llm_endpoints: tuple[str, ...] | None = Field(
        default=None,
        description="Hosts (names, *.domain, addresses) and CIDR networks an LLM base_url "
        "may point at.",
    )

    @field_validator("llm_endpoints")
    @classmethod
    def _endpoints(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(_endpoint(entry) for entry in value)


class OperatorPolicy(BaseModel):
    """The whole policy: ``default``, ``groups`` (GNS3 group names) and ``users`` (GNS3
    usernames), each a :class:`PolicyRule`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: PolicyRule = Field(default_factory=PolicyRule)
    groups: Mapping[str, PolicyRule] = Field(default_factory=dict)
    users: Mapping[str, PolicyRule] = Field(default_factory=dict)
    #: Refuse LLM endpoints on loopback, private, link-local and other non-public
    #: addresses unless a rule's ``llm_endpoints`` names them.
    deny_private_llm_endpoints: bool = False

    @property
    def needs_groups(self) -> bool:
        return bool(self.groups)

    def limits(self, username: str, groups: Sequence[str] = ()) -> UserLimits:
        """The limits of the user ``username``, a member of ``groups``."""
        own = self.users.get(username)
        theirs = [(name, self.groups[name]) for name in groups if name in self.groups]

        def pick_mode() -> tuple[CopilotMode | None, str]:
            if own is not None and own.max_mode is not None:
                return own.max_mode, f"user {username}"
            named = [(MODE_ORDER.index(r.max_mode), r.max_mode, n) for n, r in theirs if r.max_mode]
            if named:
                _, mode, name = min(named)
                return mode, f"group {name}"
            return self.default.max_mode, "default"

        def pick_approval() -> tuple[ApprovalPolicy | None, str]:
            if own is not None and own.min_approval is not None:
                return own.min_approval, f"user {username}"
            named = [
                (APPROVAL_ORDER.index(r.min_approval), r.min_approval, n)
                for n, r in theirs
                if r.min_approval
            ]
            if named:
                _, approval, name = max(named)
                return approval, f"group {name}"
            return self.default.min_approval, "default"

        def pick_endpoints() -> tuple[tuple[tuple[str, ...], ...] | None, str]:
            if own is not None and own.llm_endpoints is not None:
                return (own.llm_endpoints,), f"user {username}"
            named = [(n, r.llm_endpoints) for n, r in theirs if r.llm_endpoints is not None]
            if named:
                return tuple(e for _, e in named), "groups " + ", ".join(n for n, _ in named)
            if self.default.llm_endpoints is not None:
                return (self.default.llm_endpoints,), "default"
            return None, "default"

        mode, mode_rule = pick_mode()
        approval, approval_rule = pick_approval()
        endpoints, endpoint_rule = pick_endpoints()
        return UserLimits(
            max_mode=mode or MODE_ORDER[-1],
            min_approval=approval or APPROVAL_ORDER[0],
            llm_endpoints=endpoints,
            deny_private_llm_endpoints=self.deny_private_llm_endpoints,
            mode_rule=mode_rule,
            approval_rule=approval_rule,
            endpoint_rule=endpoint_rule,
        )


class GroupDirectory(Protocol):
    """The GNS3 groups a user belongs to."""

    async def groups(self, principal: Principal, token: str) -> Sequence[str]:
        """Their names; raises a :class:`~copilot_core.errors.CopilotError` when they
        cannot be read (the policy then cannot be applied: the request fails)."""
        ...


class PolicyBook:
    """Each user's :class:`UserLimits` under ``policy``, with their groups remembered for
    ``ttl`` seconds (only when the policy has group rules; at most ``size`` users)."""

    def __init__(
        self,
        policy: OperatorPolicy,
        groups: GroupDirectory | None = None,
        *,
        ttl: float = 30.0,
        size: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if policy.needs_groups and groups is None:
            raise ValueError("the policy has group rules: it needs a GroupDirectory")
        self.policy = policy
        self._groups = groups
        self._ttl = ttl
        self._size = size
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, tuple[str, ...]]] = OrderedDict()

    async def limits(self, principal: Principal, token: str) -> UserLimits:
        groups: Sequence[str] = ()
        if self.policy.needs_groups and self._groups is not None:
            groups = await self._groups_of(principal, token, self._groups)
        return self.policy.limits(principal.username, groups)

    async def _groups_of(
        self, principal: Principal, token: str, directory: GroupDirectory
    ) -> tuple[str, ...]:
        now = self._clock()
        cached = self._cache.get(principal.user_id)
        if cached is not None and now < cached[0]:
            return cached[1]
        found = tuple(await directory.groups(principal, token))
        if self._ttl > 0:
            self._cache[principal.user_id] = (now + self._ttl, found)
            self._cache.move_to_end(principal.user_id)
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return found


#: The addresses a host name resolves to (an empty list: it does not resolve).
HostResolver = Callable[[str], Awaitable[Sequence[str]]]

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(text: str) -> _Address | None:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _names(host: str, entry: str) -> bool:
    if entry.startswith("*."):
        return host.endswith(entry[1:])
    return host == entry


def _covers(entry: str, address: _Address) -> bool:
    try:
        return address in ipaddress.ip_network(entry)
    except ValueError:
        return False  # a host name


def _allowed_by(host: str, addresses: Sequence[_Address], entries: Sequence[str]) -> bool:
    """On the list: the host is named there, or every address it has is in its networks."""
    if any(_names(host, entry) for entry in entries):
        return True
    return all(any(_covers(entry, a) for entry in entries) for a in addresses)


async def check_llm_endpoint(url: str, limits: UserLimits, resolve: HostResolver) -> None:
    """Raises :class:`PermissionDeniedError` (naming the host and what is allowed) unless
    the operator's policy lets this user's LLM requests go to ``url``.

    A host name is judged by the addresses it resolves to (``resolve``), unless a list
    names it: a name that resolves to an address no list allows is refused, and with
    ``deny_private_llm_endpoints`` so is one that resolves to a non-public address
    (loopback, private, link-local, shared, multicast, reserved…) no list names.
    """
    if limits.llm_endpoints is None and not limits.deny_private_llm_endpoints:
        return
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    if not host:
        raise PermissionDeniedError(f"The LLM endpoint {url!r} names no host.")
    literal = _address(host)
    if literal is not None:
        addresses: list[_Address] = [literal]
    else:
        addresses = [a for a in map(_address, await resolve(host)) if a is not None]
        if not addresses:
            raise PermissionDeniedError(
                f"The LLM endpoint host {host!r} does not resolve to an address; nothing "
                "was sent to it."
            )
    for entries in limits.llm_endpoints or ():
        if not _allowed_by(host, addresses, entries):
            raise PermissionDeniedError(
                f"The LLM endpoint host {host!r} is not allowed by the operator's policy "
                f"({limits.endpoint_rule}); allowed: {', '.join(entries) or 'none'}."
            )
    if limits.deny_private_llm_endpoints:
        lists = limits.llm_endpoints or ()
        for address in addresses:
            named = any(
                _names(host, entry) or _covers(entry, address)
                for entries in lists
                for entry in entries
            )
            if not address.is_global and not named:
                raise PermissionDeniedError(
                    f"The LLM endpoint host {host!r} is or resolves to {address}, which is not "
                    "a public address; the operator's policy does not allow such endpoints "
                    "(policy.deny_private_llm_endpoints) unless a rule's llm_endpoints names "
                    "them."
                )
