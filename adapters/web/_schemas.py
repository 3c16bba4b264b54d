"""Request bodies, validated before anything happens.

Every body model is a :class:`StrictBody`: unknown fields are refused and values must
have their JSON type (a string is never taken for a bool or a number, a float never
for an integer). The app validates bodies in pydantic's strict mode, which for enum
fields would want an enum instance: :data:`Mode` takes the JSON string instead.
"""

from __future__ import annotations

import re
from enum import Enum, StrEnum
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from adapters.web._ids import SessionIdField
from copilot_core import CopilotMode
from copilot_core.ports import ApprovalPolicy
from copilot_core.rules import (
    AGENT_ID_PATTERN,
    BASE_URL_PATTERN,
    MAX_COMMENT_CHARS,
    MAX_MESSAGE_CHARS,
    TEMPERATURE_MAX,
    TEMPERATURE_MIN,
    TITLE_MAX_CHARS,
)

__all__ = [
    "BASE_URL_PATTERN",
    "ID_PATTERN",
    "MAX_SAFE_INTEGER",
    "MESSAGE_ID_PATTERN",
    "ChatRequest",
    "DecisionRequest",
    "LLMConfigBody",
    "LLMProvider",
    "Mode",
    "Policy",
    "RenameRequest",
    "StrictBody",
]

E = TypeVar("E", bound=Enum)


def _from_value(kind: type[E]) -> BeforeValidator:
    """An enum field of a strict model that takes the member's JSON value."""
    names = ", ".join(str(member.value) for member in kind)

    def parse(value: object) -> object:
        if isinstance(value, kind):
            return value
        if isinstance(value, str):
            try:
                return kind(value)
            except ValueError:
                pass
        raise ValueError(f"must be one of: {names}")

    return BeforeValidator(parse)


def _integral(value: object) -> object:
    """JSON has one number type, and JSON Schema's ``integer`` is any number without a
    fraction: ``5.0`` is the integer 5. ``5.5``, ``"5"`` and ``true`` are not."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: An approval policy, sent as its name (``changes``, ``always``, ``never``).
Policy = Annotated[ApprovalPolicy, _from_value(ApprovalPolicy)]

#: A copilot mode, sent as its name (``teaching_assistant``, ``lab_automation_assistant``).
Mode = Annotated[CopilotMode, _from_value(CopilotMode)]


class StrictBody(BaseModel):
    """A request body: unknown fields refused, values of their exact JSON type."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _integers_as_json_schema_reads_them(cls, data: Any) -> Any:
        """``5.0`` for an integer field is the integer 5, as JSON Schema reads ``integer``."""
        if not isinstance(data, dict):
            return data
        return {
            key: _integral(value) if key in cls._integer_fields() else value
            for key, value in data.items()
        }

    @classmethod
    def _integer_fields(cls) -> frozenset[str]:
        return frozenset(
            name
            for name, info in cls.model_fields.items()
            if int in (info.annotation, *get_args(info.annotation))
        )


#: A message id as the service makes them (UUIDs; any id of letters, digits, ``_.:-``).
MESSAGE_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"

#: Agent ids (``copilot``, configured names): letters, digits, ``_`` and ``-``, at most 128.
ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"


def _whitespace_class() -> str:
    """Python's whitespace (what ``str.strip`` removes, as the core does), as an explicit
    character class: regex dialects disagree on ``\\s`` (``\\x1c``-``\\x1f`` are
    whitespace to Python only), and the pattern must mean one thing everywhere."""
    # No code point above U+3000 is whitespace (and scanning them all costs 0.1 s).
    return "".join(f"\\u{code:04x}" for code in range(0x3001) if chr(code).isspace())


#: Text that is not only whitespace (a JSON Schema ``pattern`` matches anywhere in it).
NOT_BLANK = f"[^{_whitespace_class()}]"


def _not_blank(value: str) -> str:
    if re.search(NOT_BLANK, value) is None:
        raise ValueError("must not be blank")
    return value


#: A string with something in it besides whitespace.
NonBlank = Annotated[
    str, AfterValidator(_not_blank), Field(json_schema_extra={"pattern": NOT_BLANK})
]

#: An API key travels in an HTTP header: printable ASCII without spaces (the blanks
#: around a pasted key are dropped).
API_KEY_PATTERN = r"^[ \t\r\n]*[!-~]*[ \t\r\n]*$"

#: The largest integer a query parameter takes: the largest every JSON reader holds
#: exactly (2^53 - 1; offsets and cursors are stored as 64-bit integers, which an
#: offset or cursor beyond 2^63 - 1 overflowed).
MAX_SAFE_INTEGER = 2**53 - 1

#: The web API's own bounds on a model's settings (the core only asks for > 0): no model
#: answers a million tokens at once or reads ten million.
MAX_TOKENS = 1_000_000
#: The longest LLM timeout a user may set (seconds; the LLM adapter's bound too).
MAX_LLM_TIMEOUT = 3600.0
CONTEXT_LIMIT_RANGE = (1024, 10_000_000)


class ChatRequest(StrictBody):
    """One user message. Without ``session_id`` a new session is created."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={  # replace_from names a message of the session it is sent to
            "if": {
                "properties": {"replace_from": {"type": "string"}},
                "required": ["replace_from"],
            },
            "then": {"properties": {"session_id": {"type": "string"}}, "required": ["session_id"]},
        },
    )

    message: NonBlank = Field(
        min_length=1,
        max_length=MAX_MESSAGE_CHARS,
        description="The user's text (this deployment may set a lower bound; see the document).",
    )
    session_id: SessionIdField | None = Field(
        default=None, description="Continue this session (its UUID)."
    )
    stream: bool = Field(default=True, description="SSE when true, one JSON reply when false.")
    temperature: float | None = Field(
        default=None,
        ge=TEMPERATURE_MIN,
        le=TEMPERATURE_MAX,
        description="Overrides the user's temperature this turn.",
    )
    max_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    mode: Literal["text"] = Field(default="text", description="Interaction mode; only 'text'.")
    agent_id: str | None = Field(default=None, pattern=AGENT_ID_PATTERN)
    copilot_mode: Mode | None = Field(
        default=None, description="teaching_assistant or lab_automation_assistant."
    )
    replace_from: str | None = Field(
        default=None,
        pattern=MESSAGE_ID_PATTERN,
        description="Edit or regenerate: the id of the session's last user message. It and "
        "everything after it are dropped (and taken off the counters), then this message is "
        "answered. Needs session_id.",
    )

    @model_validator(mode="after")
    def _replace_from_needs_its_session(self) -> ChatRequest:
        if self.replace_from is not None and self.session_id is None:
            raise ValueError("replace_from needs the session_id of the session it belongs to")
        return self


class RenameRequest(StrictBody):
    title: NonBlank = Field(min_length=1, max_length=TITLE_MAX_CHARS)


class DecisionRequest(StrictBody):
    """A decision on a tool call waiting for approval."""

    decision: Literal["approve", "reject"]
    comment: str = Field(
        default="", max_length=MAX_COMMENT_CHARS, description="Told to the model on a rejection."
    )
    digest: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="The approval_required event's digest (of the tool and its arguments): "
        "a decision for other arguments is refused (409), and the call runs only with "
        "arguments of this digest.",
    )


class LLMProvider(StrEnum):
    """The LLM providers a user may store (the LLM adapter's list: a test keeps the two
    equal). An enum in the schema, so a client knows every accepted name."""

    OPENAI = "openai"
    OPENAI_COMPATIBLE = "openai_compatible"
    DEEPSEEK = "deepseek"
    OLLAMA = "ollama"
    VLLM = "vllm"
    LMSTUDIO = "lmstudio"
    LEMONADE = "lemonade"
    ANTHROPIC = "anthropic"
    OLLAMA_NATIVE = "ollama_native"


#: An LLM provider, sent as its name.
Provider = Annotated[LLMProvider, _from_value(LLMProvider)]


class LLMConfigBody(StrictBody):
    """The caller's LLM settings. ``api_key`` is write-only: it is never returned."""

    provider: Provider = Field(
        description="openai (OpenAI, or any OpenAI-compatible server at base_url), "
        "openai_compatible (needs base_url), deepseek, ollama, vllm, lmstudio, lemonade "
        "(OpenAI-compatible servers with their usual local address as default), anthropic "
        "or ollama_native (their own protocols).",
    )
    model: str = Field(min_length=1, max_length=200)
    base_url: str | None = Field(
        default=None,
        max_length=2000,
        pattern=BASE_URL_PATTERN,
        description="An OpenAI-compatible server: http(s)://host[:port][/path], no credentials.",
    )
    api_key: SecretStr | None = Field(
        default=None,
        description="Stored encrypted; write-only. Printable ASCII (an HTTP header carries "
        "it); an empty key removes the stored one.",
        json_schema_extra={"pattern": API_KEY_PATTERN},
    )
    temperature: float | None = Field(default=None, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX)
    max_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    context_limit: int | None = Field(
        default=None, ge=CONTEXT_LIMIT_RANGE[0], le=CONTEXT_LIMIT_RANGE[1]
    )
    title_model: str | None = Field(default=None, min_length=1, max_length=200)
    copilot_mode: Mode | None = None
    approval: Policy | None = Field(
        default=None,
        description="Which tool calls wait for your approval: changes (default: every call "
        "that can change a device or the topology), always, or never.",
    )
    connect_timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_LLM_TIMEOUT,
        description="Seconds to connect to the model's server (unset: the service's).",
    )
    first_token_timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_LLM_TIMEOUT,
        description="Seconds the model may take to its first token; a local model reading "
        "a long prompt on a CPU may need minutes (unset: the service's).",
    )
    token_timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_LLM_TIMEOUT,
        description="Seconds the model may pause between two tokens (unset: the service's).",
    )
    tool_set: Literal["full", "compact"] | None = Field(
        default=None,
        description="compact: the everyday tools and those the message cues, with short "
        "schemas; full: every tool with its whole description (unset: the service's, "
        "compact by default).",
    )
    text_tool_calls: bool | None = Field(
        default=None,
        description="Run tool calls the model writes in its text (a JSON object naming a "
        "tool) when it makes none (unset: on for local providers, off for the others).",
    )

    @field_validator("api_key")
    @classmethod
    def _check_api_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not re.fullmatch(API_KEY_PATTERN, value.get_secret_value()):
            raise ValueError("must be printable ASCII without spaces (an HTTP header carries it)")
        return value

    def to_settings(self) -> dict[str, Any]:
        """The fields the client sent, with the key revealed (in memory only); a field
        sent as ``null`` is not set (its default applies), as the schema says."""
        values = self.model_dump(
            exclude_unset=True, exclude_none=True, exclude={"api_key"}, mode="json"
        )
        if self.api_key is not None:
            values["api_key"] = self.api_key.get_secret_value()
        return values
