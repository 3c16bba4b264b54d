"""The copilot's error tree.

Every error the core raises, and every error an adapter translates a technology's
failure into, is a :class:`CopilotError`. Adapters map the tree onto their own
vocabulary (the web adapter onto HTTP statuses) in one place::

    CopilotError
    ├── InvalidRequestError            bad input; nothing was changed
    ├── AuthenticationError            no or invalid credentials
    ├── PermissionDeniedError          authenticated, but not allowed
    ├── NotFoundError
    │   ├── SessionNotFoundError       missing, or another user's (indistinguishable)
    │   ├── DrillNotFoundError         no such drill running (or not the caller's)
    │   ├── ProjectNotFoundError       missing, or not the caller's to see (indistinguishable)
    │   │   └── ProjectGoneError       GNS3 itself says it has no such project
    │   ├── ApprovalNotFoundError      no such approval pending in the session's turn
    │   └── AgentNotFoundError         an agent id that is not configured
    ├── ConflictError
    │   ├── SessionBusyError           a turn (or a rollback) is already running on the session
    │   ├── RollbackConflictError      the undo would touch what others did since
    │   ├── ProjectNotOpenedError      GNS3 project exists but is closed
    │   ├── DrillActiveError           the project already has a drill running
    │   └── LabDoesNotFitError         the lab lacks what a drill's fault needs
    ├── LLMNotConfiguredError          the user has no LLM settings yet
    ├── LLMError                       the language model failed
    │   ├── LLMSetupError              no client could be built from the user's settings
    │   ├── LLMAuthenticationError     the provider rejected the API key
    │   ├── LLMUnavailableError        the base URL cannot be reached
    │   ├── LLMModelNotFoundError      the provider does not know the model
    │   ├── LLMRateLimitedError        slow down (``retry_after`` seconds when known)
    │   ├── LLMContextLengthError      the request exceeds the model's context
    │   └── LLMStreamInterruptedError  the provider dropped the stream mid-reply
    ├── Gns3Error                      the GNS3 server answered with an error
    │   └── Gns3UnavailableError       the GNS3 server cannot be reached (try again later)
    ├── ServiceUnavailableError        the service is shutting down; retry on another replica
    ├── RestorePointNotTakenError      what a change needs could not be kept: it is not made
    ├── DrillStepError                 one step of a drill's fault could not be sent
    ├── DrillNotStartedError           the fault did not take; the lab was restored
    ├── AgentProcessError              an external agent program failed
    ├── ConversationInvariantError     an append would leave a tool call unanswered
    └── StoreError                     the checkpoint store failed
        └── StoreCorruptedError        a project's database is unreadable

Messages are written for the person who reads them: they say what happened and,
where there is one, what to do. They never contain a token, a key or a password.
"""

from __future__ import annotations

import re

__all__ = [
    "AgentNotFoundError",
    "AgentProcessError",
    "ApprovalNotFoundError",
    "AuthenticationError",
    "ConflictError",
    "ConversationInvariantError",
    "CopilotError",
    "DrillActiveError",
    "DrillNotFoundError",
    "DrillNotStartedError",
    "DrillStepError",
    "Gns3Error",
    "Gns3UnavailableError",
    "InvalidRequestError",
    "LLMAuthenticationError",
    "LLMContextLengthError",
    "LLMError",
    "LLMModelNotFoundError",
    "LLMNotConfiguredError",
    "LLMRateLimitedError",
    "LLMSetupError",
    "LLMStreamInterruptedError",
    "LLMUnavailableError",
    "LabDoesNotFitError",
    "NotFoundError",
    "PermissionDeniedError",
    "ProjectGoneError",
    "ProjectNotFoundError",
    "ProjectNotOpenedError",
    "RestorePointNotTakenError",
    "RollbackConflictError",
    "ServiceUnavailableError",
    "SessionBusyError",
    "SessionNotFoundError",
    "StoreCorruptedError",
    "StoreError",
    "error_code",
]


class CopilotError(Exception):
    """Base of every error the copilot reports on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequestError(CopilotError):
    """The request is malformed or out of range; nothing was changed."""


class AuthenticationError(CopilotError):
    """Credentials are missing, malformed or rejected."""


class PermissionDeniedError(CopilotError):
    """The caller is authenticated but may not do this."""


class NotFoundError(CopilotError):
    """The thing named does not exist (or is not the caller's)."""


class SessionNotFoundError(NotFoundError):
    """No such session for this user in this project."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"Session {session_id!r} was not found in this project.")
        self.session_id = session_id


class ProjectNotFoundError(NotFoundError):
    """No GNS3 project with this id that the caller may see (one they may not see is
    reported alike, so that ids of other users' projects cannot be probed)."""

    def __init__(self, project_id: str) -> None:
        super().__init__(f"GNS3 project {project_id!r} was not found.")
        self.project_id = project_id


class ProjectGoneError(ProjectNotFoundError):
    """GNS3 itself answered that it has no project with this id (deleted, or never was).

    GNS3 (3.0.6) says so only to a caller with rights on the project's path; anyone else
    gets "permission denied" whether the project exists or not. So this, unlike a plain
    :class:`ProjectNotFoundError`, means the project is gone, and what the copilot keeps
    of it may go too. A client sees the two alike (404, the same message).
    """


class ApprovalNotFoundError(NotFoundError):
    """No call of the session's running turn waits for this approval."""

    def __init__(self, approval_id: str) -> None:
        super().__init__(
            f"No change waits for approval {approval_id!r} in this session; "
            "it may belong to a turn that has ended."
        )
        self.approval_id = approval_id


class AgentNotFoundError(NotFoundError):
    """The agent id is not configured."""

    def __init__(self, agent_id: str, known: list[str]) -> None:
        names = ", ".join(sorted(known)) or "none"
        super().__init__(f"Unknown agent {agent_id!r}; available agents: {names}.")
        self.agent_id = agent_id


class ConflictError(CopilotError):
    """The request conflicts with the current state."""


class SessionBusyError(ConflictError):
    """A turn (or a rollback: ``rollback=True``) is already running on this session."""

    def __init__(self, session_id: str, *, rollback: bool = False) -> None:
        if rollback:
            message = (
                f"Session {session_id!r} has a rollback running; wait for it to finish, "
                "then try again."
            )
        else:
            message = (
                f"Session {session_id!r} already has a turn running; wait for it to finish "
                "or abort it first."
            )
        super().__init__(message)
        self.session_id = session_id
        self.rollback = rollback


class RollbackConflictError(ConflictError):
    """Undoing a change would touch what was done since by someone else (``conflicts``,
    one line each); nothing was changed. Asking again with ``force`` goes on."""

    def __init__(self, conflicts: list[str]) -> None:
        super().__init__(
            "The change was not undone: undoing it would also touch what was done since "
            f"({'; '.join(conflicts)}). Nothing was changed; confirm (force) to undo it "
            "anyway, with what is listed."
        )
        self.conflicts = conflicts


class ProjectNotOpenedError(ConflictError):
    """The GNS3 project exists but is not opened."""

    def __init__(self, project_id: str) -> None:
        super().__init__(
            f"GNS3 project {project_id!r} is not opened; open it in GNS3 to chat about it."
        )
        self.project_id = project_id


class LLMNotConfiguredError(CopilotError):
    """The user has not configured a language model yet."""

    def __init__(self) -> None:
        super().__init__(
            "No language model is configured for your account. Set one with "
            "PUT /v3/copilot/llm-config (provider, model, api_key, base_url)."
        )


class LLMError(CopilotError):
    """The language model provider failed."""


class LLMSetupError(LLMError):
    """No model client could be built from the user's settings (the provider's SDK
    refused them, or is missing or broken): the turn's answer says so; nothing was sent."""


class LLMAuthenticationError(LLMError):
    """The provider rejected the API key."""


class LLMUnavailableError(LLMError):
    """The provider's base URL could not be reached."""


class LLMModelNotFoundError(LLMError):
    """The provider does not serve the configured model."""


class LLMRateLimitedError(LLMError):
    """The provider asks us to slow down."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LLMContextLengthError(LLMError):
    """The request is longer than the model's context window."""


class LLMStreamInterruptedError(LLMError):
    """The provider closed the stream before the reply was complete."""


class Gns3Error(CopilotError):
    """The GNS3 server answered with an error; ``message`` carries GNS3's own words."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class Gns3UnavailableError(Gns3Error):
    """The GNS3 server could not be reached (connection refused, timed out).

    ``retry_after`` is a hint in seconds for clients.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServiceUnavailableError(CopilotError):
    """The service cannot take this request now (it is shutting down)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RestorePointNotTakenError(CopilotError):
    """A restore point of what a change will change could not be taken (the message
    says why); the change is not made without a way back."""


class DrillStepError(CopilotError):
    """Step ``step`` (0-based, of the steps sent) of a drill's fault (or of its reference
    fix) could not be sent: ``reason`` says why (a line the platform's grammar refused, a
    console that did not answer, a GNS3 error)."""

    def __init__(self, step: int, reason: str) -> None:
        super().__init__(f"Step {step + 1} could not be sent: {reason}")
        self.step = step
        self.reason = reason


class DrillNotStartedError(CopilotError):
    """A drill could not hand its fault over (a step failed, or a symptom did not show);
    the lab was restored, and ``restored`` says whether exactly (``differences`` else)."""

    def __init__(self, reason: str, *, restored: bool, differences: tuple[str, ...] = ()) -> None:
        after = (
            "the lab was restored as it was."
            if restored
            else "the lab could not be restored exactly; it still differs: "
            + "; ".join(differences)
            + "."
        )
        super().__init__(f"The drill could not start ({reason}); {after}")
        self.reason = reason
        self.restored = restored
        self.differences = differences


class DrillActiveError(ConflictError):
    """The project already has a drill running: one drill at a time per project."""

    def __init__(self, project_id: str) -> None:
        super().__init__(
            f"Project {project_id!r} already has a drill running; end it (or give up) "
            "before starting another."
        )
        self.project_id = project_id


class LabDoesNotFitError(ConflictError):
    """The project's lab lacks what the drill's fault needs (``missing``, sentences a
    student can act on); nothing was changed."""

    def __init__(self, missing: tuple[str, ...]) -> None:
        super().__init__("This lab does not have what the drill needs: " + "; ".join(missing) + ".")
        self.missing = missing


class DrillNotFoundError(NotFoundError):
    """No drill with this id is running on the project (or it is another user's)."""

    def __init__(self, drill_id: str) -> None:
        super().__init__(f"No drill {drill_id!r} is running on this project.")
        self.drill_id = drill_id


class AgentProcessError(CopilotError):
    """An external agent program could not be started or failed."""


class ConversationInvariantError(CopilotError, ValueError):
    """An append would break the conversation's OpenAI validity; nothing was appended."""


class StoreError(CopilotError):
    """The checkpoint store failed."""


class StoreCorruptedError(StoreError):
    """A project's database cannot be read."""

    def __init__(self, project_id: str, detail: str) -> None:
        super().__init__(
            f"The copilot database of project {project_id!r} is unreadable ({detail}); "
            "move the file aside to start afresh."
        )
        self.project_id = project_id


def error_code(error: CopilotError) -> str:
    """A stable machine-readable name: ``LLMRateLimitedError`` gives ``llm_rate_limited``."""
    name = type(error).__name__.removesuffix("Error")
    return _WORD_BOUNDARY.sub("_", name).lower()


_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
