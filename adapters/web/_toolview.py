"""A tool's output as a network engineer reads it: HTML for the page, Markdown for a report.

The output is read by its shape, so any tool source gets the same view:

* **batched results** (``{"status", "results": [{device_name, status, output, error?,
  blocked_commands?}]}``): one section per device, node or link with its status;
* **console output** (an item's ``output`` is a list of ``{command, output, parsed?,
  error?, timed_out?, truncated?}``): each command as a heading (``R1# show ip route``),
  its output as monospace text highlighted as device text, ``parsed`` rows as a table;
* **a capture summary** (``packets``, ``protocols``, ``top_talkers``…): small tables;
* **the topology** (``nodes`` and ``links``) and **templates**: tables;
* **a failure** (``{"status": "error" | "rejected" | "aborted", "error"}``): its reason;
* **checks** (``verify_intent``'s ``{status, summary, checks}``) and a verified change's
  ``verification``: one row per check with its verdict in each phase (before, after,
  after a rollback: a check the result names only is ``pass``, or ``not held``) and what
  was observed;
* anything else: its fields as a table, nested values as JSON.

:func:`failure_reason` is what a card shows when the tool failed. The HTML goes through
the same sanitiser as rendered Markdown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, Final

from adapters.web._highlight import highlight_code
from adapters.web._markdown import sanitise

__all__ = [
    "CommandRun",
    "DeviceRun",
    "device_runs",
    "failure_reason",
    "parse_output",
    "render_tool_html",
]

#: Tags and classes the tool view uses (besides the Markdown allow-list).
_VIEW_TAGS: Final = frozenset(
    {
        "code", "dd", "div", "dl", "dt", "h4", "h5", "li", "p", "pre", "section", "span",
        "strong", "table", "tbody", "td", "th", "thead", "tr", "ul", "em", "small",
    }
)  # fmt: skip
_VIEW_CLASSES: Final = {
    "div": {"tv", "tv-command", "tv-flags", "tv-table-wrap"},
    "section": {"tv-item", "tv-verification"},
    "h4": {"tv-device"},
    "h5": {"tv-cmd"},
    "p": {"tv-error", "tv-note", "tv-blocked"},
    "pre": {"tv-output"},
    "table": {"tv-table", "tv-parsed", "tv-kv", "tv-checks"},
    "small": {"tv-status", "tv-status-success", "tv-status-failed", "tv-status-partial"},
}
_VIEW_ATTRIBUTES: Final = {"section": {"data-status"}, "pre": {"data-device"}}

#: Output statuses of a call that did not do what it was asked (``rolled_back``: a verified
#: change undone because a check failed).
_FAILED: Final = frozenset({"error", "failed", "rejected", "aborted", "rolled_back"})
_MAX_ROWS: Final = 200


def parse_output(text: str) -> Any:
    """The tool's output as JSON when it is JSON, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass(frozen=True, slots=True)
class CommandRun:
    """One command on one device and what it printed."""

    command: str
    output: str
    error: str | None = None
    parsed: list[dict[str, Any]] | None = None
    flags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceRun:
    """One item of a batched result: a device (node, link) and how it went."""

    name: str
    status: str
    error: str | None = None
    blocked: tuple[str, ...] = ()
    commands: list[CommandRun] = field(default_factory=list)
    output: Any = None
    prompt: str = ""

    @property
    def heading(self) -> str:
        """What stands before each command: the device's name and its own prompt mark
        (``PC1>`` on a VPCS, ``R1#`` on a router); ``#`` when the device gave none."""
        mark = self.prompt.rstrip()[-1:] if self.prompt.strip() else ""
        return f"{self.name}{mark if mark in _PROMPT_MARKS else '#'}"


#: The last character of the prompts the consoles know (``R1#``, ``PC1>``, ``$``).
_PROMPT_MARKS = frozenset("#>$%")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def _blocked(item: Mapping[str, Any]) -> tuple[str, ...]:
    found = []
    for entry in item.get("blocked_commands") or ():
        if isinstance(entry, Mapping):
            found.append(f"{entry.get('command', '')}: {entry.get('reason', '')}".strip(": "))
        else:
            found.append(str(entry))
    return tuple(found)


def _commands(output: Any) -> list[CommandRun] | None:
    if not (isinstance(output, list) and output):
        return None
    if not all(isinstance(entry, Mapping) and "command" in entry for entry in output):
        return None
    runs = []
    for entry in output:
        flags = tuple(
            label
            for key, label in (("timed_out", "timed out"), ("truncated", "truncated"))
            if entry.get(key)
        )
        parsed = entry.get("parsed")
        rows = (
            [row for row in parsed if isinstance(row, Mapping)] if isinstance(parsed, list) else []
        )
        late = entry.get("late_output")
        text = _text(entry.get("output", ""))
        if isinstance(late, str) and late.strip():
            text = f"{late.rstrip()}\n{text}"
        runs.append(
            CommandRun(
                str(entry.get("command", "")),
                text,
                str(entry["error"]) if entry.get("error") else None,
                [dict(row) for row in rows] or None,
                flags,
            )
        )
    return runs


def device_runs(output: Any) -> list[DeviceRun] | None:
    """The items of a batched result (``None`` when the output is not one)."""
    if not isinstance(output, Mapping) or not isinstance(output.get("results"), list):
        return None
    items = [item for item in output["results"] if isinstance(item, Mapping)]
    if not items or not all("device_name" in item for item in items):
        return None
    runs = []
    for item in items:
        commands = _commands(item.get("output"))
        runs.append(
            DeviceRun(
                str(item.get("device_name", "")),
                str(item.get("status", "")),
                str(item["error"]) if item.get("error") else None,
                _blocked(item),
                commands or [],
                None if commands else item.get("output"),
                str(item.get("prompt") or ""),
            )
        )
    return runs


def failure_reason(output: Any, status: str | None = None) -> str | None:
    """Why the call failed, for a person (``None`` when it did not fail): its ``error``,
    or each failed item's."""
    if isinstance(output, Mapping):
        state = str(output.get("status") or status or "")
        if output.get("error") and (state in _FAILED or "results" not in output):
            reason = str(output["error"])
            if output.get("comment"):
                reason += f" Comment: {output['comment']}"
            return reason
        if state == "aborted":
            return "Stopped before it finished."
        runs = device_runs(output)
        if runs and state in _FAILED | {"partial_success"}:
            failed = [f"{run.name}: {run.error}" for run in runs if run.error]
            if failed:
                return "; ".join(failed)
    if status in _FAILED and isinstance(output, str) and output.strip():
        return output.strip()[:2000]
    return None


# ------------------------------------------------------------------------- HTML
def _status_badge(status: str) -> str:
    kind = {"success": "success", "partial_success": "partial"}.get(status, "failed")
    label = {"success": "ok", "partial_success": "partly"}.get(status, status or "?")
    return f'<small class="tv-status tv-status-{kind}">{escape(label)}</small>'


def _table(rows: Sequence[Mapping[str, Any]], css: str = "tv-table") -> str:
    columns: list[str] = []
    for row in rows[:_MAX_ROWS]:
        columns.extend(str(key) for key in row if str(key) not in columns)
    head = "".join(f"<th>{escape(column)}</th>" for column in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{escape(_cell(row.get(column)))}</td>" for column in columns)
        + "</tr>"
        for row in rows[:_MAX_ROWS]
    )
    more = (
        f'<p class="tv-note">{len(rows) - _MAX_ROWS} more rows in the raw output.</p>'
        if len(rows) > _MAX_ROWS
        else ""
    )
    return (
        f'<div class="tv-table-wrap"><table class="{css}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>{more}"
    )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_cell(item) for item in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _pre(text: str, device: str = "") -> str:
    body = highlight_code(text, "network") or escape(text)
    attribute = f' data-device="{escape(device)}"' if device else ""
    return f'<pre class="tv-output"{attribute}><code>{body}</code></pre>'


def _key_values(data: Mapping[str, Any]) -> str:
    rows = []
    for key, value in data.items():
        if isinstance(value, (Mapping, list)) and value:
            if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
                shown = _table(value)
            else:
                shown = f"<pre><code>{escape(_text(value))}</code></pre>"
        else:
            shown = escape(_cell(value))
        rows.append(f"<tr><th>{escape(str(key))}</th><td>{shown}</td></tr>")
    return f'<table class="tv-kv"><tbody>{"".join(rows)}</tbody></table>'


def _capture(summary: Mapping[str, Any]) -> str:
    parts = []
    facts = {
        "packets": summary.get("packets"),
        "bytes": summary.get("bytes"),
        "duration (s)": summary.get("duration_s"),
        "read for (s)": summary.get("seconds"),
    }
    protocols = summary.get("protocols")
    if isinstance(protocols, Mapping):
        facts["protocols"] = ", ".join(f"{name} {count}" for name, count in protocols.items())
    echo = summary.get("icmp_echo")
    if isinstance(echo, Mapping):
        facts["ICMP echo"] = (
            f"{echo.get('replied', 0)} replied, {echo.get('unanswered_requests', 0)} unanswered"
        )
    arp = summary.get("arp")
    if isinstance(arp, Mapping):
        facts["ARP"] = f"{arp.get('who_has', 0)} who-has, {arp.get('is_at', 0)} is-at"
    parts.append(_key_values({k: v for k, v in facts.items() if v not in (None, "")}))
    for key, title in (("top_talkers", "Top talkers"), ("top_conversations", "Conversations")):
        rows = summary.get(key)
        if isinstance(rows, list) and rows and all(isinstance(r, Mapping) for r in rows):
            parts.append(f'<h5 class="tv-cmd">{title}</h5>{_table(rows)}')
    if summary.get("note"):
        parts.append(f'<p class="tv-note">{escape(str(summary["note"]))}</p>')
    if summary.get("error"):
        parts.append(f'<p class="tv-error">{escape(str(summary["error"]))}</p>')
    return "".join(parts)


def _is_capture(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and "packets" in value
        and ("protocols" in value or "note" in value or "error" in value)
    )


def _device_section(run: DeviceRun) -> Iterator[str]:
    yield f'<section class="tv-item" data-status="{escape(run.status)}">'
    yield f'<h4 class="tv-device">{escape(run.name)} {_status_badge(run.status)}</h4>'
    if run.error:
        yield f'<p class="tv-error">{escape(run.error)}</p>'
    for blocked in run.blocked:
        yield f'<p class="tv-blocked">Blocked: {escape(blocked)}</p>'
    for command in run.commands:
        yield '<div class="tv-command">'
        yield f'<h5 class="tv-cmd">{escape(run.heading)} {escape(command.command)}</h5>'
        if command.flags:
            yield f'<div class="tv-flags">{escape(", ".join(command.flags))}</div>'
        if command.output.strip() or not command.error:
            yield _pre(command.output, run.name)
        if command.error:
            yield f'<p class="tv-error">{escape(command.error)}</p>'
        if command.parsed:
            yield _table(command.parsed, "tv-parsed")
        yield "</div>"
    if not run.commands and run.output not in (None, "", {}, []):
        if _is_capture(run.output):
            yield _capture(run.output)
        elif isinstance(run.output, Mapping):
            yield _key_values(run.output)
        else:
            yield _pre(_text(run.output), run.name)
    yield "</section>"


def _is_intent(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("checks"), list)
        and isinstance(value.get("summary"), Mapping)
    )


def _verdict(result: Mapping[str, Any] | None) -> str:
    if not isinstance(result, Mapping):
        return ""
    status = str(result.get("status") or "")
    badge = {"pass": "success", "fail": "failed"}.get(status, "partial")
    why = result.get("reason") or ""
    return f'<small class="tv-status tv-status-{badge}">{escape(status)}</small>' + (
        f" {escape(str(why))}" if why and status != "pass" else ""
    )


def _checks_table(phases: Sequence[tuple[str, Any]]) -> str:
    """One row per check (by name), one column per phase that ran."""
    ran = [(title, result) for title, result in phases if _is_intent(result)]
    names: list[str] = []
    verdicts: dict[tuple[str, str], Mapping[str, Any]] = {}
    for title, result in ran:
        for check in result["checks"]:
            if isinstance(check, Mapping):
                name = str(check.get("name") or check.get("kind") or "?")
                names.extend([name] if name not in names else [])
                verdicts[(title, name)] = check

    def column(title: str) -> Callable[[str], str]:
        return lambda name: _verdict(verdicts.get((title, name)))

    return _checks_grid(names, [(title, column(title)) for title, _ in ran])


def _checks_grid(names: Sequence[str], columns: Sequence[tuple[str, Callable[[str], str]]]) -> str:
    """The checks table: a row per check's name, a column per (title, cell of a name)."""
    head = "".join(f"<th>{escape(title)}</th>" for title, _ in columns)
    rows = "".join(
        f"<tr><th>{escape(name)}</th>"
        + "".join(f"<td>{cell(name)}</td>" for _, cell in columns)
        + "</tr>"
        for name in names
    )
    return (
        f'<div class="tv-table-wrap"><table class="tv-checks"><thead><tr><th>check</th>{head}'
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


_NOT_HELD: Final = '<small class="tv-status tv-status-partial">not held</small>'
_PASS: Final = '<small class="tv-status tv-status-success">pass</small>'


def _names(value: Any) -> list[str]:
    return [str(name) for name in value] if isinstance(value, list) else []


def _phase_cells(title: str, phase: Mapping[str, Any], deciding: set[str]) -> Callable[[str], str]:
    """A verification phase's cell for a check's name. The result says each check once
    (``VerifiedChange.to_dict``): in full where it did not hold (``checks``), else by name
    (before: ``held``; after: ``passed``, and every deciding check not listed held; after
    the rollback: ``as_before``, not held as before the change, and every other deciding
    check held). A saved result of the older shape lists every check in ``checks``."""
    stated = {
        str(c.get("name") or c.get("kind") or "?"): c
        for c in phase.get("checks") or ()
        if isinstance(c, Mapping)
    }
    named = {"before": "held", "after": "passed", "after rollback": "as_before"}[title]
    listed = set(_names(phase.get(named)))
    cut = named not in phase  # the names were cut (``verification.cut``), or an older shape

    def cell(name: str) -> str:
        if name in stated:
            return _verdict(stated[name])
        if name in listed:
            return _NOT_HELD if title == "after rollback" else _PASS
        if title == "before":
            return "" if cut else _NOT_HELD
        if title == "after" or not cut:
            return _PASS if name in deciding else ""
        return ""

    return cell


def _phases_table(verification: Mapping[str, Any]) -> str:
    """A verified change's checks, one row per check, one column per phase that ran."""
    phases = [
        (title, phase)
        for title, phase in (
            ("before", verification.get("before")),
            ("after", verification.get("after")),
            ("after rollback", verification.get("after_rollback")),
        )
        if isinstance(phase, Mapping)
    ]
    deciding = _names(verification.get("deciding"))
    names = list(dict.fromkeys([*deciding, *_names(verification.get("standing"))]))
    for _, phase in phases:
        for check in phase.get("checks") or ():
            if isinstance(check, Mapping):
                name = str(check.get("name") or check.get("kind") or "?")
                names.extend([name] if name not in names else [])
    return _checks_grid(
        names, [(title, _phase_cells(title, phase, set(deciding))) for title, phase in phases]
    )


def _verification(verification: Mapping[str, Any]) -> Iterator[str]:
    status = str(verification.get("status") or "")
    rolled = verification.get("rolled_back") is True
    outcome = {
        "pass": "every check held",
        "not_run": "not checked: the change did not run",
    }.get(status, "rolled back: a check failed" if rolled else "a check failed")
    yield f'<section class="tv-verification" data-status="{escape(status)}">'
    yield f'<h5 class="tv-cmd">Verification: {escape(outcome)}</h5>'
    yield _phases_table(verification)
    for said in (verification.get("reason"), verification.get("cut")):
        if said:
            yield f'<p class="tv-note">{escape(str(said))}</p>'
    for key, said in (("diff", "What changed"), ("diff_after_rollback", "After the rollback")):
        diff = verification.get(key)
        if isinstance(diff, Mapping):
            text = diff.get("summary") or diff.get("unavailable") or ""
            yield f'<p class="tv-note">{escape(said)}: {escape(str(text))}</p>'
    yield "</section>"


def _body(output: Any, status: str | None) -> Iterator[str]:
    verification = output.get("verification") if isinstance(output, Mapping) else None
    if isinstance(verification, Mapping):
        yield from _verification(verification)
        output = {k: v for k, v in output.items() if k != "verification"}
    reason = failure_reason(output, status)
    runs = device_runs(output)
    if runs is not None:
        if reason and isinstance(output, Mapping) and output.get("error"):
            yield f'<p class="tv-error">{escape(reason)}</p>'
        for run in runs:
            yield from _device_section(run)
        return
    if reason:
        yield f'<p class="tv-error">{escape(reason)}</p>'
    if isinstance(output, str):
        if output.strip() and not reason:
            yield _pre(output)
        return
    if not isinstance(output, Mapping):
        yield f"<pre><code>{escape(_text(output))}</code></pre>"
        return
    if isinstance(output.get("nodes"), list) and isinstance(output.get("links"), list):
        yield from _topology(output)
        return
    if _is_capture(output):
        yield _capture(output)
        return
    if _is_intent(output):
        yield _checks_table([(str(output.get("status") or "result"), output)])
        return
    rest = {
        key: value
        for key, value in output.items()
        if not (reason and key in ("status", "error", "comment"))
    }
    if rest:
        yield _key_values(rest)


def _topology(output: Mapping[str, Any]) -> Iterator[str]:
    nodes = [
        {
            "name": node.get("name"),
            "type": node.get("device_type") or node.get("node_type"),
            "status": node.get("status"),
            "console": node.get("console"),
            "ports in use": ", ".join(
                str(p.get("name")) for p in node.get("ports") or () if p.get("in_use")
            ),
        }
        for node in output["nodes"]
        if isinstance(node, Mapping)
    ]
    links = [
        {
            "link": " ↔ ".join(
                f"{end.get('node')} {end.get('port')}"
                for end in link.get("ends") or ()
                if isinstance(end, Mapping)
            )
        }
        for link in output["links"]
        if isinstance(link, Mapping)
    ]
    yield f'<h5 class="tv-cmd">Nodes ({len(nodes)})</h5>'
    yield _table(nodes) if nodes else '<p class="tv-note">No nodes.</p>'
    yield f'<h5 class="tv-cmd">Links ({len(links)})</h5>'
    yield _table(links) if links else '<p class="tv-note">No links.</p>'


def render_tool_html(output_text: str, status: str | None = None) -> str:
    """The readable view of one tool's output (sanitised HTML)."""
    html = '<div class="tv">' + "".join(_body(parse_output(output_text), status)) + "</div>"
    return sanitise(html, tags=_VIEW_TAGS, attributes=dict(_VIEW_ATTRIBUTES), classes=_VIEW_CLASSES)
