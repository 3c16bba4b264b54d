"""The system prompt keeps a line only when the request offers the tools and arguments
the line names (issue 40): a small model told to call a tool it was not given writes
the call as prose or invents its result."""

from __future__ import annotations

from copilot_core import CopilotMode, PromptBook, ToolSpec
from copilot_core._prompts import Line

TEACHING = CopilotMode.TEACHING_ASSISTANT


def spec(name: str, *arguments: str) -> ToolSpec:
    properties = {argument: {"type": "string"} for argument in arguments}
    return ToolSpec(name, name, {"type": "object", "properties": properties})


BOOK = PromptBook(
    common=(
        Line("Always."),
        Line("Call probe.", tools=("probe",)),
        Line("Pass verify.", arguments=("verify",)),
        Line("Probe and pass verify.", tools=("probe",), arguments=("verify",)),
        Line("Test it yourself.", unless=("probe",)),
    ),
    modes={TEACHING: (Line("Teach."), Line("Undo with rewind.", tools=("rewind",)))},
)


def test_a_line_needs_every_tool_and_argument_it_names() -> None:
    assert BOOK.system(TEACHING, [spec("read")]) == "Always.\nTest it yourself.\n\nTeach."
    assert BOOK.system(TEACHING, [spec("probe"), spec("rewind")]) == (
        "Always.\nCall probe.\n\nTeach.\nUndo with rewind."
    )
    # The argument counts on any offered tool, the tool named by the line on its own.
    assert BOOK.system(TEACHING, [spec("change", "verify"), spec("probe")]) == (
        "Always.\nCall probe.\nPass verify.\nProbe and pass verify.\n\nTeach."
    )
    assert BOOK.system(TEACHING, [spec("change", "verify")]) == (
        "Always.\nPass verify.\nTest it yourself.\n\nTeach."
    )


def test_without_an_offer_every_line_but_the_fallbacks_is_kept() -> None:
    """A client shown the prompt with the whole catalogue (MCP's prompts) reads it all."""
    assert BOOK.system(TEACHING) == (
        "Always.\nCall probe.\nPass verify.\nProbe and pass verify.\n\nTeach.\nUndo with rewind."
    )


def test_an_operators_own_prompt_text_is_kept_whole() -> None:
    """Prompts loaded from the skills directory are plain text: the operator's words."""
    book = PromptBook(common="Call probe always.", modes={TEACHING: "Teach."})
    assert book.system(TEACHING, [spec("read")]) == "Call probe always.\n\nTeach."


def test_teaching_mode_tells_the_model_to_say_it_does_not_make_a_change() -> None:
    # A 1.5B model asked for a change in teaching mode showed the command as a how-to,
    # with no sentence saying it would not make the change (issue 40): the built-in
    # teaching prompt says what to say first, whatever tools the request offers.
    book = PromptBook()
    refusal = "say first that you do not make it in teaching mode"
    for tools in (None, [spec("gns3_topology_reader")]):
        teaching = book.system(TEACHING, tools)
        assert refusal in teaching
        assert teaching.index(refusal) < teaching.index("show the commands to type")
    assert refusal not in book.system(CopilotMode.LAB_AUTOMATION_ASSISTANT)
