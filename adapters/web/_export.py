"""A session exported: as a Markdown lab report, or as JSON (the session and its messages).

The report reads like an engineer's notes of the lab: each question, the tools the
copilot ran (with the commands and the devices' output, per device, and who approved a
change), then the answer. A change rolled back later says so where it is shown ("Undone
by …"), and the rollback itself follows as the tool call it is. The JSON is exactly the
API's shapes: the session object and the OpenAI-shaped messages.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any

from adapters.web._contracts import Gns3Directory
from adapters.web._toolview import DeviceRun, device_runs, failure_reason, parse_output
from copilot_core import Message, Role, Session
from copilot_core.errors import CopilotError

__all__ = ["file_name", "markdown_report", "project_name"]


def file_name(session: Session) -> str:
    """The download's name, without extension: the title as a safe slug
    (``ospf-lab-check``), or ``copilot-session-<id>`` when the title has no letters or
    digits to keep."""
    plain = unicodedata.normalize("NFKD", session.title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")[:60].rstrip("-")
    return slug or f"copilot-session-{session.thread_id}"


async def project_name(directory: Gns3Directory | None, token: str, project_id: str) -> str | None:
    """The project's name as GNS3 gives it to the caller; ``None`` when this deployment
    has no GNS3 directory or GNS3 does not answer (the report then shows the id)."""
    if directory is None:
        return None
    try:
        listed = await directory.projects(token)
    except CopilotError:
        return None
    for project in listed:
        if str(project.get("project_id", "")).lower() == project_id.lower():
            return str(project.get("name") or "") or None
    return None


def _fence(text: str, language: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in text.split("\n") if set(run) == {"`"}), default=0)
    ticks = "`" * max(3, longest + 1)
    run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        if run >= len(ticks):
            ticks = "`" * (run + 1)
    return f"{ticks}{language}\n{text.rstrip()}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines())


def _approval(metadata: dict[str, Any]) -> str | None:
    approval = metadata.get("approval")
    if not isinstance(approval, dict):
        return None
    reason = approval.get("reason")
    if reason == "timeout":
        return "Approval: not given in time (the change was not made)."
    if reason == "aborted":
        return "Approval: the turn was stopped while it waited."
    decided = "approved" if approval.get("decision") == "approve" else "rejected"
    text = f"Approval: {decided} by {approval.get('by') or 'someone'}"
    if approval.get("comment"):
        text += f" — “{approval['comment']}”"
    return text + "."


def _device(run: DeviceRun) -> Iterator[str]:
    yield f"#### {run.name} — {run.status or 'unknown'}"
    yield ""
    if run.error:
        yield f"Failed: {run.error}"
        yield ""
    for blocked in run.blocked:
        yield f"Blocked: {blocked}"
        yield ""
    if run.commands:
        lines = []
        for command in run.commands:
            lines.append(f"{run.heading} {command.command}")
            if command.output.strip():
                lines.append(command.output.rstrip())
            if command.error:
                lines.append(f"[{command.error}]")
        yield _fence("\n".join(lines), "text")
        yield ""
    elif run.output not in (None, "", {}, []):
        shown = run.output if isinstance(run.output, str) else json.dumps(run.output, indent=2)
        yield _fence(shown, "" if isinstance(run.output, str) else "json")
        yield ""


def _undone(rollback: dict[str, Any] | None) -> str | None:
    """The line that says a change was rolled back later, by whom and how it went."""
    if not rollback:
        return None
    status = rollback.get("status")
    how = "" if status == "success" else f" (the rollback's status: {status}; see below)"
    return (
        f"**Undone by {rollback.get('by_name') or rollback.get('by') or 'someone'}** later "
        f"in this session{how}: what this change did is no longer in the lab."
    )


def _tool(
    call_name: str, arguments: str, result: Message | None, undone: dict[str, Any] | None = None
) -> Iterator[str]:
    output = parse_output(result.content) if result is not None else None
    status = output.get("status") if isinstance(output, dict) else None
    yield f"### Tool `{call_name}`" + (f" — {status}" if status else "")
    yield ""
    line = _undone(undone)
    if line:
        yield line
        yield ""
    if arguments.strip() not in ("", "{}"):
        try:
            shown = json.dumps(json.loads(arguments), ensure_ascii=False, indent=2)
        except ValueError:
            shown = arguments
        yield _fence(shown, "json")
        yield ""
    if result is None:
        yield "No result was recorded."
        yield ""
        return
    approval = _approval(result.metadata)
    if approval:
        yield approval
        yield ""
    runs = device_runs(output)
    if runs is not None:
        for run in runs:
            yield from _device(run)
        return
    reason = failure_reason(output, str(status) if status else None)
    if reason:
        yield f"Failed: {reason}"
        yield ""
        return
    yield "<details><summary>Output</summary>"
    yield ""
    yield _fence(result.content, "json" if not isinstance(output, str) else "text")
    yield ""
    yield "</details>"
    yield ""


def markdown_report(
    session: Session, messages: Sequence[Message], project: str | None = None
) -> str:
    """The session as a Markdown lab report (see the module docstring); ``project``: the
    project's name (its id is shown as well)."""
    results = {m.tool_call_id: m for m in messages if m.role is Role.TOOL and m.tool_call_id}
    # A rollback's messages name the change they undid (its tool call).
    undone: dict[str, dict[str, Any]] = {}
    for message in messages:
        rollback = message.metadata.get("rollback")
        if message.role is Role.ASSISTANT and isinstance(rollback, dict):
            undone[str(rollback.get("undoes_tool_call_id"))] = rollback
    lines = [
        f"# {session.title or 'Copilot session'}",
        "",
        f"- Project: {project} (`{session.project_id}`)"
        if project
        else f"- Project: `{session.project_id}`",
        f"- Session: `{session.thread_id}` ({session.copilot_mode.value})",
        f"- Started {session.created_at.isoformat()}, last updated "
        f"{session.updated_at.isoformat()}",
        f"- {session.message_count} messages, {session.llm_calls_count} LLM calls, "
        f"{session.input_tokens} input + {session.output_tokens} output = "
        f"{session.total_tokens} tokens",
        "",
    ]
    question = 0
    for message in messages:
        if message.role is Role.USER:
            question += 1
            lines += [f"## {question}. Question", "", _quote(message.content), ""]
        elif message.role is Role.ASSISTANT:
            for call in message.tool_calls or ():
                lines += list(
                    _tool(
                        call.function.name,
                        call.function.arguments,
                        results.get(call.id),
                        undone.get(call.id),
                    )
                )
            if message.content.strip():
                lines += ["### Answer", "", message.content.strip(), ""]
            if message.metadata.get("aborted"):
                lines += ["*Stopped; the answer above is partial.*", ""]
    return "\n".join(lines).rstrip() + "\n"
