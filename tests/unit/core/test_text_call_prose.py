"""The prose a reply keeps when its calls are read from its text teaches the right shape
(issue 40, item 3): a 1.5B model whose stored reply read "…you can use the following
commands:\\n\\nAfter running this command…" (the blocks cut out, the call as
``tool_calls``) copied that shape on the next turns, prose pointing at nothing and no
call, so its link, start and address requests did nothing. The sentence that
introduced a cut-out block goes with it, as stored and as replayed. The prose after a
block goes too: stored as the message's prose before its calls, "After running this
command, the lab will have…" stated the outcome before the call, and the model's next
reply copied that (the outcome, no call: the address request did nothing). The prose
before the first block stays, with no hole."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from copilot_core import Message
from copilot_core._messages import FunctionCall, ToolCall
from copilot_core._replay import replayable
from copilot_core._textcalls import text_tool_calls, without_outcomes
from copilot_core.rules import ArgumentLimits

OFFERED = {"create_gns3_node", "create_gns3_link", "start_gns3_node"}
NOW = datetime(2026, 12, 7, tzinfo=UTC)

#: The bench's reply (requests.jsonl, request 2), as Qwen2.5-Coder-1.5B wrote it.
BENCH_REPLY = (
    "To add two Linux hosts, PC1 and PC2, to the lab, you can use the following commands:\n\n"
    "```json\n"
    + json.dumps(
        {
            "name": "create_gns3_node",
            "arguments": {
                "nodes": [
                    {"template_name": "Linux", "name": "PC1", "x": 100, "y": 100},
                    {"template_name": "Linux", "name": "PC2", "x": 200, "y": 100},
                ]
            },
        },
        indent=2,
    )
    + "\n```\n\n"
    "After running this command, the lab will have two Linux hosts, PC1 and PC2, with their "
    "respective positions on the canvas."
)
#: What the product stored for it, and sent back on every later turn.
BENCH_STORED = (
    "To add two Linux hosts, PC1 and PC2, to the lab, you can use the following commands:\n\n"
    "After running this command, the lab will have two Linux hosts, PC1 and PC2, with their "
    "respective positions on the canvas."
)


def rest_of(text: str) -> str:
    calls, rest = text_tool_calls(text, OFFERED, ArgumentLimits(), max_calls=64)
    assert calls
    return rest


def replayed(content: str) -> str:
    """``content`` as the model is sent it, stored as an assistant message with a call."""
    call = ToolCall(id="c1", function=FunctionCall(name="create_gns3_node", arguments="{}"))
    history = [
        Message.user("u", "add PC1 and PC2", NOW),
        Message.assistant("a", content, NOW, (call,)),
        Message.tool("t", "c1", "create_gns3_node", "created", NOW),
    ]
    return replayable(history)[1].content


def block(name: str, tagged: bool = False) -> str:
    body = json.dumps({"name": name, "arguments": {"node_names": ["PC1"]}})
    return f"<tool_call>\n{body}\n</tool_call>" if tagged else f"```json\n{body}\n```"


# ------------------------------------------------------------------- the bench's shape
def test_the_bench_reply_is_stored_without_its_introduction_or_the_outcome_after_it() -> None:
    # Its prose was an introduction and an outcome: the call stands alone.
    assert rest_of(BENCH_REPLY) == ""
    assert rest_of("PC1 and PC2 will be Linux hosts.\n\n" + BENCH_REPLY) == (
        "PC1 and PC2 will be Linux hosts."
    )


def test_the_bench_reply_as_stored_before_is_replayed_without_either() -> None:
    assert replayed(BENCH_STORED) == ""
    # The hole of the first fix's time too, and its outcome.
    assert replayed("use the following commands:\n\n\n\n\nThese commands will") == ""
    # What the address reply copied (bench, 2nd run, row 5), as a stored call message.
    assert (
        replayed(
            "To give PC1 an address, you need to configure the network interfaces.\n\n"
            "After running this command, the IP addresses of PC1 and PC2 have been assigned."
        )
        == "To give PC1 an address, you need to configure the network interfaces."
    )


def test_an_outcome_is_one_sentence_not_its_paragraph() -> None:
    assert without_outcomes("PC1 is up. After running this, PC2 is too. Done.") == (
        "PC1 is up. Done."
    )
    assert without_outcomes("**Once you run these**, the link exists.\nNext line.") == (
        "Next line."
    )
    for kept in (
        "After the link is made, PC1 reaches PC2.",  # not a call's outcome
        "These nodes will start.",
        "Run this command after PC1 starts.",
    ):
        assert without_outcomes(kept) == kept


def test_a_reply_that_is_an_introduction_and_a_call_keeps_no_prose() -> None:
    assert rest_of(f"Here is the command to start PC1:\n{block('start_gns3_node')}") == ""
    assert replayed("To start PC1 and PC2, you can use the following commands:\n") == ""


# ------------------------------------------------------------------ what else stays
def test_the_sentences_before_the_introduction_stay() -> None:
    text = (
        "PC1 and PC2 are stopped. You can start them using the start function.\n\n"
        f"Yes. Here is the command:\n{block('start_gns3_node')}\n\nThey will be running."
    )
    assert rest_of(text) == (
        "PC1 and PC2 are stopped. You can start them using the start function.\n\nYes."
    )


def test_a_list_item_that_introduced_a_call_goes_whole_and_its_list_stays() -> None:
    text = (
        "Here are the steps:\n\n1. Identify the ports:\n   - PC1: Ethernet0\n\n"
        "2. Execute the command to create the link:\n   "
        + block("create_gns3_link")
        + "\n\n3. **Verify** it:\n"
        + block("start_gns3_node", tagged=True)
        + "\n\nThis confirms the link."
    )
    assert rest_of(text) == "Here are the steps:\n\n1. Identify the ports:\n   - PC1: Ethernet0"


def test_an_introduction_of_an_introduction_goes_too() -> None:
    text = f"I will do two things.\nFirst:\n**Start PC1:**\n{block('start_gns3_node')}\nDone."
    assert rest_of(text) == "I will do two things."


def test_on_replay_a_colon_that_introduces_a_list_code_or_a_table_stays() -> None:
    for kept in (
        "Here are the steps:\n\n1. Open the console.",
        "Here are the steps:\n\n- Open the console.",
        "The config is:\n\n```\ninterfaces:\n\n  eth0\n```",
        "The ports:\n\n| node | port |",
        "Notes:\n\n    indented",
    ):
        assert replayed(kept) == kept


def test_a_colon_inside_a_code_block_is_not_an_introduction() -> None:
    text = "Config:\n```\nrouter ospf:\n\nnetwork 10.0.0.0\n```\n\nThen I start PC1."
    assert replayed(text) == text
    assert rest_of(f"{text}\n{block('start_gns3_node')}") == text


def test_a_reply_with_no_introduction_keeps_its_prose_before_the_call() -> None:
    text = f"I will start PC1.\n{block('start_gns3_node')}\nThen it runs."
    assert rest_of(text) == "I will start PC1."
    assert replayed("I will start PC1.\n\nThen it runs.") == "I will start PC1.\n\nThen it runs."


# ------------------------------------------------------------------------- properties
#: Plain sentences (prose that stays), outcomes (a call's result told before it: dropped
#: on replay), and introductions (each right before a block).
PLAIN = [
    "PC1 is up.",
    "The lab has 2 nodes, e.g. PC1.",
    "Done!",
]
OUTCOMES = [
    "After running this command, the lab will have a link between PC1 and PC2.",
    "These commands will create PC1 and PC2.",
]
INTROS = [
    "To connect PC1 to PC2 with a link, you can use the following commands:",
    "Here is the command:",
    "3. Execute the command to create the link:",
    "- Start them:",
    "**Step 2:**",
]
SEPARATORS = ["\n", "\n\n", "\n\n\n\n\n", " \n \n"]


@st.composite
def replies(draw: st.DrawFn) -> tuple[str, str, list[str], list[str], int]:
    """A reply of prose paragraphs and call blocks, each block maybe introduced (the
    introduction on its own line or after a sentence): (the reply; the reply as stored
    before these fixes, blocks cut out and the whitespace kept; its sentences before the
    first block, in order; all its sentences, in order; its number of blocks)."""
    reply: list[str] = []
    old: list[str] = []
    before: list[str] = []
    every: list[str] = []
    blocks = 0
    for _ in range(draw(st.integers(1, 6))):
        sentences = draw(st.lists(st.sampled_from(PLAIN + OUTCOMES), max_size=3))
        every.extend(sentences)
        if not blocks:
            before.extend(sentences)
        paragraph = " ".join(sentences)
        if draw(st.booleans()):  # a block follows
            intro = draw(st.sampled_from(["", *INTROS]))
            joint = draw(st.sampled_from([" ", "\n"])) if paragraph else ""
            prose = paragraph + (joint + intro if intro else "")
            separator = draw(st.sampled_from(SEPARATORS))
            name = draw(st.sampled_from(sorted(OFFERED)))
            reply.append(prose + separator + block(name, draw(st.booleans())) + separator)
            old.append(prose + separator + separator)
            blocks += 1
        elif paragraph:
            reply.append(paragraph + "\n\n")
            old.append(paragraph + "\n\n")
    return "".join(reply), "".join(old), before, every, blocks


def assert_teaches_the_right_shape(prose: str, sentences: list[str]) -> None:
    """No hole, no line ending in ``:`` (every ``:`` line of these replies introduced a
    block), no list marker left alone, its ends stripped, and exactly ``sentences``
    kept, in order."""
    assert "\n\n\n" not in prose and not re.search(r"\n[ \t]*\n[ \t]*\n", prose)
    assert prose == prose.strip()
    for line in prose.splitlines():
        assert not re.search(r":[*_]*\s*$", line), prose
        assert not re.fullmatch(r"\s*(?:[-*+]|\d+[.)])\s*", line), prose
    for sentence in PLAIN + OUTCOMES:
        assert prose.count(sentence) == sentences.count(sentence), (sentence, prose)
    position = 0
    for sentence in sentences:
        found = prose.find(sentence, position)
        assert found >= 0, (sentence, prose)
        position = found + len(sentence)


@given(replies())
def test_the_stored_prose_of_a_text_call_reply_is_what_came_before_its_first_call(
    case: tuple[str, str, list[str], list[str], int],
) -> None:
    reply, _, before, _, blocks = case
    calls, rest = text_tool_calls(reply, OFFERED, ArgumentLimits(), max_calls=64)
    assert len(calls) == blocks
    if blocks:
        assert_teaches_the_right_shape(rest, before)


@given(replies())
def test_a_text_call_reply_stored_before_is_replayed_with_no_hole_introduction_or_outcome(
    case: tuple[str, str, list[str], list[str], int],
) -> None:
    _, old, _, every, _ = case
    assert_teaches_the_right_shape(replayed(old), [s for s in every if s in PLAIN])
