"""The tool registry: each GNS3 tool is an argument model, an async handler and its policy.

A :class:`Gns3Tool` names the tool, describes it, lists the copilot modes that offer it,
says whether a successful call changes the topology, and can describe the change a call
would make to the lab (a :class:`~copilot_core.ports.ChangePreview`, what the user
approves). Its argument model is a pydantic model; the JSON schema the model sees is derived from it
(:func:`openai_schema`: references inlined, titles and nulls dropped, limits taken from
the settings), and arguments that do not validate become an error result naming each
field and what was wrong (:meth:`Gns3Tool.parse`), never an exception.

:class:`ToolRegistry` lists the tools; :class:`~adapters.gns3.Gns3ToolExecutor` serves
them to the core, and any other adapter-side consumer (an MCP server) can serve the same
list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationError,
    ValidationInfo,
)
from pydantic.dataclasses import dataclass as settings_dataclass
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from adapters.gns3._skills import SkillLibrary
from adapters.gns3.console import ConsoleRunner
from adapters.gns3.lab._snapshot import LabSnapshot
from adapters.gns3.model import LabStateStore, ShowParser
from adapters.gns3.rest import Gns3Client
from copilot_core import (
    CopilotMode,
    SystemClock,
    ToolContext,
    ToolResult,
    ToolSpec,
    UuidIdFactory,
)
from copilot_core.ports import (
    ChangePreview,
    Clock,
    IdFactory,
    IntentStore,
    RestorePointStore,
    ToolEffect,
    Touch,
)

__all__ = [
    "AUTOMATION_ONLY",
    "BOTH_MODES",
    "AtMost",
    "CallScope",
    "Gns3Tool",
    "Gns3ToolSettings",
    "LabAccess",
    "RestoreScope",
    "ToolArguments",
    "ToolRegistry",
    "openai_schema",
    "parse_arguments",
]

JSON = dict[str, Any]
BOTH_MODES = frozenset({CopilotMode.TEACHING_ASSISTANT, CopilotMode.LAB_AUTOMATION_ASSISTANT})
AUTOMATION_ONLY = frozenset({CopilotMode.LAB_AUTOMATION_ASSISTANT})


@settings_dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class Gns3ToolSettings:
    """Bounds of the tools, each declared here once (the service's ``gns3`` section is a
    :class:`~adapters.gns3.Gns3Settings`, which adds the server's address to these).

    ``call_budget`` bounds one console call (commands that would start later are not
    run; keep it under the agent's tool time limit so the call answers with what it has);
    a verified change may wait ``max_change_verify_wait`` twice, after the change and
    after a rollback: keep twice this under the agent's tool time limit too.
    """

    start_timeout: float = Field(
        default=90.0, gt=0, description="Seconds a node may take to start."
    )
    max_console_wait: float = Field(
        default=240.0,
        gt=0,
        description="The longest wait_for_console may wait for a console's prompt (seconds).",
    )
    poll_interval: float = Field(default=0.5, gt=0, description="Seconds between status polls.")
    action_settle: float = Field(
        default=3.0,
        gt=0,
        description="Seconds a stop or suspend is given to show in the node's status.",
    )
    start_grace: float = Field(
        default=5.0,
        gt=0,
        description="Seconds a started node may still read stopped before the start failed.",
    )
    max_command_timeout: float = Field(
        default=300.0,
        gt=0,
        description="The longest timeout a console command of a tool call may ask for.",
    )
    call_budget: float = Field(
        default=290.0,
        gt=0,
        description="Seconds one console tool call may take (keep it under agent.tool_timeout).",
    )
    capture_default_seconds: float = Field(
        default=5.0, gt=0, description="A capture's default length."
    )
    capture_max_seconds: float = Field(
        default=30.0, gt=0, description="A capture's longest length."
    )
    capture_max_bytes: int = Field(
        default=8 << 20, ge=1024, description="The largest capture read."
    )
    max_batch: int = Field(default=32, ge=1, description="Devices one batch tool call may touch.")
    max_commands: int = Field(default=50, ge=1, description="Commands one tool call may send.")
    max_verify_wait: float = Field(
        default=300.0,
        ge=0,
        description="The longest wait_s verify_intent may ask for (seconds).",
    )
    verify_interval: float = Field(
        default=2.0,
        gt=0,
        description="Seconds between two rounds of checks that do not hold yet.",
    )
    max_change_verify_wait: float = Field(
        default=120.0,
        ge=0,
        description="The longest verify_wait_s a changing call may ask for (seconds; a "
        "verified change may wait twice, after the change and after a rollback).",
    )
    build_consoles: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Devices a lab build works on at once: nodes created and started, "
        "consoles configured (build_lab).",
    )


# ------------------------------------------------------------------ arguments
class ToolArguments(BaseModel):
    """Base of every argument model: immutable, unknown arguments refused.

    An argument the tool does not know is an error naming it (a typo such as ``timeout``
    for ``timeout_s`` would otherwise be silently ignored).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class AtMost:
    """``Annotated`` metadata: a number, or a list's length, is at most a setting's value.

    The limit is read from the :class:`Gns3ToolSettings` passed as validation context and
    written into the JSON schema by :func:`openai_schema` (``maximum``/``maxItems``).
    """

    setting: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.with_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema["x-limit"] = self.setting
        return json_schema

    def _check(self, value: Any, info: ValidationInfo) -> Any:
        settings = info.context if isinstance(info.context, Gns3ToolSettings) else None
        limit = getattr(settings or Gns3ToolSettings(), self.setting)
        if isinstance(value, Sized) and not isinstance(value, str):
            if len(value) > limit:
                raise ValueError(f"at most {limit:g} items (this server's limit)")
        elif value > limit:
            raise ValueError(f"at most {limit:g} (this server's limit)")
        return value


def _inline(node: Any, defs: JSON) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, defs)
    return {key: _inline(value, defs) for key, value in node.items()}


def _clean(node: Any, settings: Gns3ToolSettings) -> Any:
    """A schema node as strict OpenAI-compatible servers accept it."""
    if isinstance(node, list):
        return [_clean(item, settings) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    variants = node.get("anyOf")
    if isinstance(variants, list):
        kept = [v for v in variants if v != {"type": "null"}]
        if len(kept) == 1:  # Optional[X]: absent rather than null
            del node["anyOf"]
            node = {**kept[0], **node}
    node.pop("title", None)
    node.pop("default", None)
    node.pop("discriminator", None)  # its mapping points into the dropped $defs
    limit = node.pop("x-limit", None)
    if isinstance(limit, str):
        value = getattr(settings, limit)
        node["maxItems" if node.get("type") == "array" else "maximum"] = value
    cleaned: JSON = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            cleaned[key] = {name: _clean(prop, settings) for name, prop in value.items()}
        else:
            cleaned[key] = _clean(value, settings)
    return cleaned


def openai_schema(model: type[BaseModel], settings: Gns3ToolSettings) -> JSON:
    """The argument model's JSON schema, cleaned for OpenAI-compatible providers.

    References are inlined (no ``$defs``), ``title`` and ``default`` keywords dropped
    (defaults are stated in descriptions), ``Optional`` fields become plain optional
    properties instead of ``anyOf [..., null]``, and settings-bound limits are resolved.
    """
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    schema = _clean(_inline(raw, defs), settings)
    schema.pop("description", None)  # the model's docstring: the tool has its description
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return dict(schema)


# ------------------------------------------------------------------ the lab
@dataclass(frozen=True, slots=True)
class LabAccess:
    """What every handler works with: GNS3's API, the consoles, skills, settings, the
    show-output parser, where restore points and standing intent are kept (``None``:
    nowhere), the clock and ids restore points are made with, and the lab states each
    conversation captured (in this process: see docs/decisions.md)."""

    client: Gns3Client
    runner: ConsoleRunner
    skills: SkillLibrary
    settings: Gns3ToolSettings
    parser: ShowParser = field(default_factory=ShowParser)
    restore_points: RestorePointStore | None = None
    #: Where each user's standing intent is kept (a verified change runs it too).
    intent: IntentStore | None = None
    #: What restore points are stamped and named with.
    clock: Clock = field(default_factory=SystemClock)
    ids: IdFactory = field(default_factory=UuidIdFactory)
    lab_states: LabStateStore = field(default_factory=LabStateStore)

    async def snapshot(self, scope: CallScope) -> LabSnapshot:
        """The project (it must be opened), its nodes, links and template names."""
        return await LabSnapshot.read(self.client, scope.token, scope.project_id)


@dataclass(frozen=True, slots=True)
class CallScope:
    """One call's context: who asks, in which project, with which GNS3 token."""

    context: ToolContext
    token: str = field(repr=False)

    @property
    def project_id(self) -> str:
        return self.context.project_id


@dataclass(frozen=True, slots=True)
class RestoreScope:
    """What the restore point taken before an approved call keeps.

    ``devices``: the nodes whose configuration the call changes; a restore point must
    hold each one that runs, or the call is not made. ``nodes``: nodes the call stops,
    suspends or deletes; their configuration is kept when it can be read. ``every_node``:
    every node of the project, likewise. ``topology``: nodes, links, filters, drawings
    (and a GNS3 snapshot when every node is stopped). ``device_types`` overrides a
    node's detected platform, as the call does.
    """

    devices: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    every_node: bool = False
    topology: bool = False
    device_types: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, preview: ChangePreview) -> RestoreScope:
        """The devices a preview lists, and the topology when it lists topology changes."""
        return cls(devices=tuple(preview.devices), topology=bool(preview.topology))


ArgsT = TypeVar("ArgsT", bound=BaseModel)
Handler = Callable[[LabAccess, ArgsT, CallScope], Awaitable[ToolResult]]
Describer = Callable[[LabAccess, ArgsT, CallScope], Awaitable[ChangePreview | None]]


_VERIFIABLE = frozenset(
    {ToolEffect.DEVICE_CHANGE, ToolEffect.TOPOLOGY_CHANGE, ToolEffect.NODE_STATE}
)


def _scope_of_preview(args: Any, preview: ChangePreview) -> RestoreScope:
    return RestoreScope.of(preview)


@dataclass(frozen=True, slots=True)
class Gns3Tool(Generic[ArgsT]):
    """One tool: its name, description, argument model, handler and policy.

    ``modes`` are the copilot modes that offer it; ``effect`` is what it can do at most
    (the core's :class:`~copilot_core.ports.ToolEffect`: every tool declares one);
    ``mutates_topology`` tells the agent to re-read the topology after a success;
    ``needs_gns3`` is false for tools that work without the caller's GNS3 token;
    ``change(args, mode)`` previews what a call would change in the lab, for the user to
    approve (``None``: this call changes nothing); ``describe`` does it instead when the
    preview needs to read something (a restore point). A tool that is not read-only and
    has neither counts as changing on every call; ``restores(args,
    preview)`` says what the restore point taken before an approved call keeps (by
    default: the preview's devices, and the topology when it changes; ``None``: nothing
    to keep, as for a packet capture, so no restore point); ``example`` is a
    valid argument object shown when a call's arguments are invalid; ``title(args)``
    names a call for people in plain words (see :mod:`adapters.gns3.tools._titles`);
    ``touches(args)`` declares the nodes a call reads, creates or changes, by which the
    core orders the calls of one reply.
    """

    name: str
    description: str
    arguments: type[ArgsT]
    handler: Handler[ArgsT]
    modes: frozenset[CopilotMode]
    example: JSON
    effect: ToolEffect
    mutates_topology: bool = False
    needs_gns3: bool = True
    change: Callable[[ArgsT, CopilotMode], ChangePreview | None] | None = None
    describe: Describer[ArgsT] | None = None
    restores: Callable[[ArgsT, ChangePreview], RestoreScope | None] = _scope_of_preview
    #: Whether a call may carry checks that decide it (``verify``; see
    #: :mod:`adapters.gns3.tools._verified`): every tool that changes a device, a node's
    #: state or the topology, unless it says otherwise (a rollback is not itself verified).
    checks_allowed: bool = True
    title: Callable[[ArgsT], str] | None = None
    #: What a call reads, creates or changes (see :mod:`adapters.gns3.tools._touches`).
    touches: Callable[[ArgsT], Sequence[Touch] | None] | None = None

    @property
    def verifiable(self) -> bool:
        return self.checks_allowed and self.effect in _VERIFIABLE

    def spec(self, lab: LabAccess) -> ToolSpec:
        """The tool as offered to a model; its description may quote ``{settings.x}`` and
        ``{runner.x}`` (limits and defaults the model should plan with)."""
        return ToolSpec(
            self.name,
            self.description.format(settings=lab.settings, runner=lab.runner),
            openai_schema(self.arguments, lab.settings),
            mutates_topology=self.mutates_topology,
            effect=self.effect,
        )

    def parse(self, arguments: JSON, settings: Gns3ToolSettings) -> ArgsT | ToolResult:
        """The validated arguments, or an error result naming every bad field."""
        return parse_arguments(self.arguments, arguments, settings, self.name, self.example)

    async def run(self, lab: LabAccess, args: ArgsT, scope: CallScope) -> ToolResult:
        return await self.handler(lab, args, scope)


def parse_arguments(
    model: type[ArgsT], arguments: JSON, settings: Gns3ToolSettings, tool: str, example: JSON
) -> ArgsT | ToolResult:
    """``arguments`` validated by ``model``, or an error result naming every bad field and
    showing ``example`` (a valid call of ``tool``)."""
    try:
        return model.model_validate(arguments, context=settings)
    except ValidationError as exc:
        problems = [
            {
                "field": ".".join(str(part) for part in error["loc"]) or "(arguments)",
                "problem": error["msg"],
            }
            for error in exc.errors(include_url=False, include_input=False)
        ]
        listed = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
        return ToolResult.error(
            f"The arguments of {tool} are invalid: {listed}. Nothing was done.",
            fields=problems,
            expected=example,
        )


class ToolRegistry:
    """The tools by name, in catalogue order."""

    def __init__(self, tools: Iterable[Gns3Tool[Any]]) -> None:
        self._tools: dict[str, Gns3Tool[Any]] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool

    def __iter__(self) -> Iterator[Gns3Tool[Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Gns3Tool[Any] | None:
        return self._tools.get(name)

    def offered(self, mode: CopilotMode) -> list[Gns3Tool[Any]]:
        """The tools ``mode`` offers, in catalogue order."""
        return [tool for tool in self._tools.values() if mode in tool.modes]
