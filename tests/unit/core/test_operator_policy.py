"""The operator's policy in the core: how rules combine, and which LLM endpoints pass
(host names judged by what they resolve to, through a resolver given as a function)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from copilot_core import CopilotMode
from copilot_core.errors import PermissionDeniedError
from copilot_core.policy import OperatorPolicy, UserLimits, check_llm_endpoint
from copilot_core.ports import ApprovalPolicy

TEACHING, LAB = CopilotMode.TEACHING_ASSISTANT, CopilotMode.LAB_AUTOMATION_ASSISTANT


def resolver(table: Mapping[str, Sequence[str]]):  # type: ignore[no-untyped-def]
    async def resolve(host: str) -> Sequence[str]:
        return table.get(host, ())

    return resolve


POLICY = OperatorPolicy.model_validate(
    {
        "default": {"min_approval": "changes", "llm_endpoints": ["api.openai.com", "10.0.0.0/8"]},
        "groups": {
            "students": {"max_mode": "teaching_assistant", "min_approval": "always"},
            "staff": {"max_mode": "lab_automation_assistant", "llm_endpoints": ["*.lab.example"]},
            "lab": {"llm_endpoints": ["10.1.0.0/16", "gpu.lab.example"]},
        },
        "users": {"alice": {"max_mode": "lab_automation_assistant", "min_approval": "never"}},
    }
)


def test_a_users_own_rule_wins_then_the_most_restrictive_group_then_the_default() -> None:
    student = POLICY.limits("bob", ["staff", "students"])
    alice = POLICY.limits("alice", ["students"])
    nobody = POLICY.limits("carol")

    assert (student.max_mode, student.min_approval) == (TEACHING, ApprovalPolicy.ALWAYS)
    assert student.mode_rule == "group students"
    assert (alice.max_mode, alice.min_approval) == (LAB, ApprovalPolicy.NEVER)
    assert (nobody.max_mode, nobody.min_approval) == (LAB, ApprovalPolicy.CHANGES)
    assert nobody.llm_endpoints == (("api.openai.com", "10.0.0.0/8"),)
    assert POLICY.limits("dan", ["staff", "lab"]).llm_endpoints == (
        ("*.lab.example",),
        ("10.1.0.0/16", "gpu.lab.example"),
    )


def test_modes_and_approvals_are_capped_and_floored() -> None:
    limits = UserLimits(max_mode=TEACHING, min_approval=ApprovalPolicy.CHANGES)

    assert limits.cap_mode(LAB) is TEACHING
    assert limits.floor_approval(ApprovalPolicy.NEVER) is ApprovalPolicy.CHANGES
    assert limits.floor_approval(ApprovalPolicy.ALWAYS) is ApprovalPolicy.ALWAYS
    with pytest.raises(PermissionDeniedError, match="at most 'teaching_assistant'"):
        limits.require_mode(LAB)
    with pytest.raises(PermissionDeniedError, match="at least 'changes'"):
        limits.require_approval(ApprovalPolicy.NEVER)


@pytest.mark.parametrize("entry", ["", "not a host!", "10.0.0.0/33", "-bad.example"])
def test_a_bad_endpoint_entry_is_refused_when_the_policy_is_read(entry: str) -> None:
    with pytest.raises(ValueError, match=r"is empty|neither a host name"):
        OperatorPolicy.model_validate({"default": {"llm_endpoints": [entry]}})


DNS = {
    "api.openai.com": ["162.159.140.245"],
    "gpu.lab.example": ["10.1.2.3"],
    "evil.example": ["127.0.0.1"],
    "rebind.lab.example": ["169.254.169.254"],
    "mixed.example": ["10.1.0.5", "8.8.8.8"],
}


@pytest.mark.parametrize(
    ("url", "lists", "deny_private", "refused"),
    [
        ("https://api.openai.com/v1", (("api.openai.com",),), False, None),
        ("http://10.1.0.9:8000/v1", (("10.0.0.0/8",),), False, None),
        ("http://evil.example/v1", (("10.0.0.0/8",),), False, "'evil.example' is not allowed"),
        ("http://mixed.example/v1", (("10.0.0.0/8",),), False, "'mixed.example' is not allowed"),
        ("http://gpu.lab.example/v1", (("*.lab.example",), ("10.1.0.0/16",)), False, None),
        ("http://[::ffff:127.0.0.1]/v1", (("10.0.0.0/8",),), False, "is not allowed"),
        ("http://nowhere.example/v1", (("10.0.0.0/8",),), False, "does not resolve"),
        ("http://127.0.0.1:11434/v1", None, True, "not a public address"),
        ("http://evil.example/v1", None, True, "resolves to 127.0.0.1"),
        ("http://169.254.169.254/v1", None, True, "not a public address"),
        ("https://api.openai.com/v1", None, True, None),
        ("http://rebind.lab.example/v1", (("*.lab.example",),), True, None),
        ("http://10.1.0.9/v1", (("10.0.0.0/8",),), True, None),
        ("http://127.0.0.1/v1", None, False, None),
    ],
)
async def test_an_endpoint_passes_only_what_the_policy_allows(
    url: str,
    lists: tuple[tuple[str, ...], ...] | None,
    deny_private: bool,
    refused: str | None,
) -> None:
    limits = UserLimits(llm_endpoints=lists, deny_private_llm_endpoints=deny_private)
    if refused is None:
        await check_llm_endpoint(url, limits, resolver(DNS))
    else:
        with pytest.raises(PermissionDeniedError, match=refused):
            await check_llm_endpoint(url, limits, resolver(DNS))
