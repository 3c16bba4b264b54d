"""A user's limits under the operator's policy, as a value every core request carries.

:class:`UserLimits` is what :class:`~copilot_core.policy.OperatorPolicy` says of one user
(the highest copilot mode, the least approval setting, the LLM endpoints) and the checks
that apply it. It lives apart from the policy, which reads it from rules and groups,
because the ports and the requests carry it (:mod:`copilot_core.policy` re-exports it): a
value both import, so that neither imports the other.

One rule, one place: adapters look the limits up and hand them in with the request
(:class:`~copilot_core.TurnRequest`, :class:`~copilot_core.rollback.RollbackRequest`,
a standing-intent run, a tool call's :class:`~copilot_core.ToolContext`); the use case
applies them, once — the turn's start (``_turn_start``), the rollback (``rollback``), the
tool gate (``_toolgate``: every tool call, the MCP server's included) — and its refusal is a
:class:`~copilot_core.errors.PermissionDeniedError` the adapters only map (HTTP 403, an MCP
error). ``tests/unit/test_one_rule_one_place.py`` keeps the checks there.
"""

from __future__ import annotations

from dataclasses import dataclass

from copilot_core._approvals import ApprovalPolicy
from copilot_core._session import CopilotMode
from copilot_core.errors import PermissionDeniedError

__all__ = ["APPROVAL_ORDER", "MODE_ORDER", "UNLIMITED", "UserLimits"]

#: The copilot modes from the most restricted to the least.
MODE_ORDER: tuple[CopilotMode, ...] = (
    CopilotMode.TEACHING_ASSISTANT,
    CopilotMode.LAB_AUTOMATION_ASSISTANT,
)
#: The approval settings from the one that asks least to the one that asks most.
APPROVAL_ORDER: tuple[ApprovalPolicy, ...] = (
    ApprovalPolicy.NEVER,
    ApprovalPolicy.CHANGES,
    ApprovalPolicy.ALWAYS,
)


@dataclass(frozen=True, slots=True)
class UserLimits:
    """One user's limits under the operator's policy (the defaults allow everything)."""

    max_mode: CopilotMode = MODE_ORDER[-1]
    min_approval: ApprovalPolicy = APPROVAL_ORDER[0]
    #: Each entry a list the endpoint must be on (one per rule that applies); ``None``:
    #: any endpoint (unless ``deny_private_llm_endpoints``).
    llm_endpoints: tuple[tuple[str, ...], ...] | None = None
    deny_private_llm_endpoints: bool = False
    #: Which rule set each limit (``user alice``, ``group students``, ``default``).
    mode_rule: str = "default"
    approval_rule: str = "default"
    endpoint_rule: str = "default"

    # ------------------------------------------------------------------ modes
    @property
    def modes(self) -> tuple[CopilotMode, ...]:
        """The modes allowed, most restricted first."""
        return MODE_ORDER[: MODE_ORDER.index(self.max_mode) + 1]

    def allows_mode(self, mode: CopilotMode) -> bool:
        return MODE_ORDER.index(mode) <= MODE_ORDER.index(self.max_mode)

    def cap_mode(self, mode: CopilotMode) -> CopilotMode:
        """``mode``, or the highest allowed when it is above it."""
        return mode if self.allows_mode(mode) else self.max_mode

    def require_mode(self, mode: CopilotMode | None, what: str = "This") -> None:
        """PermissionDeniedError when ``mode`` is above the highest allowed."""
        if mode is not None and not self.allows_mode(mode):
            raise PermissionDeniedError(
                f"{what} needs the copilot mode {mode.value!r}, but the operator's policy "
                f"({self.mode_rule}) allows at most {self.max_mode.value!r}; allowed: "
                f"{', '.join(m.value for m in self.modes)}."
            )

    # --------------------------------------------------------------- approvals
    @property
    def approvals(self) -> tuple[ApprovalPolicy, ...]:
        """The approval settings allowed, from the one that asks least."""
        return APPROVAL_ORDER[APPROVAL_ORDER.index(self.min_approval) :]

    def allows_approval(self, approval: ApprovalPolicy) -> bool:
        return APPROVAL_ORDER.index(approval) >= APPROVAL_ORDER.index(self.min_approval)

    def floor_approval(self, approval: ApprovalPolicy) -> ApprovalPolicy:
        """``approval``, or the least allowed when it asks less."""
        return approval if self.allows_approval(approval) else self.min_approval

    def require_approval(self, approval: ApprovalPolicy | None) -> None:
        """PermissionDeniedError when ``approval`` asks less than the policy requires."""
        if approval is not None and not self.allows_approval(approval):
            raise PermissionDeniedError(
                f"The approval setting {approval.value!r} is below what the operator's "
                f"policy ({self.approval_rule}) requires: at least "
                f"{self.min_approval.value!r}; allowed: "
                f"{', '.join(a.value for a in self.approvals)}."
            )


#: No policy: every mode, every approval setting, any LLM endpoint (what a request carries
#: when the deployment has no operator's policy).
UNLIMITED = UserLimits()
