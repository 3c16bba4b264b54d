"""TiktokenTokenCounter: real cl100k_base counts from the file shipped in adapters/llm/data
(its SHA-256 checked at load), never a download."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.llm import SHIPPED_ENCODINGS, TiktokenTokenCounter, offline_encoding
from copilot_core import ApproximateTokenCounter, Message
from copilot_core._tokens import CachedTokenCounter
from copilot_core.ports import FunctionCall, ToolCall

NOW = datetime(2026, 1, 1, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[3]


def test_cl100k_base_is_available_offline_and_cached() -> None:
    encoding = offline_encoding("cl100k_base")
    assert encoding is not None
    # well-known cl100k_base token ids
    assert encoding.encode("hello world") == [15339, 1917]
    assert offline_encoding("cl100k_base") is encoding


def test_the_shipped_file_is_the_official_cl100k_base() -> None:
    shipped = SHIPPED_ENCODINGS["cl100k_base"]
    data = (REPO / "adapters" / "llm" / "data" / shipped.file).read_bytes()
    assert hashlib.sha256(data).hexdigest() == shipped.sha256
    # tiktoken's own published hash for cl100k_base
    assert shipped.sha256 == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    encoding = offline_encoding("cl100k_base")
    assert encoding is not None and encoding.n_vocab == 100277
    assert encoding.encode("<|endoftext|>", allowed_special="all") == [100257]
    assert encoding.decode(encoding.encode("R1# show ip interface brief")) == (
        "R1# show ip interface brief"
    )


@pytest.fixture
def fresh_encodings() -> Iterator[None]:
    offline_encoding.cache_clear()
    yield
    offline_encoding.cache_clear()


def test_a_damaged_encoding_file_is_refused_and_counting_falls_back(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fresh_encodings: None
) -> None:
    wrong = dataclasses.replace(SHIPPED_ENCODINGS["cl100k_base"], sha256="0" * 64)
    monkeypatch.setitem(SHIPPED_ENCODINGS, "cl100k_base", wrong)
    with caplog.at_level(logging.WARNING, logger="adapters.llm._tokens"):
        counter = TiktokenTokenCounter()
    assert not counter.exact
    assert "damaged" in caplog.text and "0" * 64 in caplog.text
    messages = [Message.user("u", "x" * 400, NOW)]
    assert counter.count(messages) == ApproximateTokenCounter().count(messages)


def test_the_encoding_file_ships_in_the_wheel(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("gns3_copilot-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read("adapters/llm/data/cl100k_base.tiktoken")
    assert hashlib.sha256(data).hexdigest() == SHIPPED_ENCODINGS["cl100k_base"].sha256


def test_counts_content_with_per_message_framing() -> None:
    counter = TiktokenTokenCounter()
    assert counter.exact
    assert counter.count_text("hello world") == 2
    assert counter.count([Message.user("u", "hello world", NOW)]) == 3 + 2
    assert counter.count([]) == 0


def test_counts_tool_calls_and_names() -> None:
    counter = TiktokenTokenCounter()
    call = ToolCall(id="c", function=FunctionCall(name="get_nodes", arguments='{"a": 1}'))
    assistant = Message.assistant("a", "", NOW, (call,))
    tool = Message.tool("t", "c", "get_nodes", "ok", NOW)

    expected_call = 3 + counter.count_text("get_nodes") + counter.count_text('{"a": 1}')
    assert counter.count([assistant]) == 3 + expected_call
    assert counter.count([tool]) == 3 + counter.count_text("ok") + 1 + counter.count_text(
        "get_nodes"
    )


def test_special_token_text_is_counted_as_text() -> None:
    counter = TiktokenTokenCounter()
    assert counter.count_text("<|endoftext|>") > 1


def test_unknown_encoding_falls_back_to_the_estimate() -> None:
    counter = TiktokenTokenCounter("o200k_base")  # not shipped offline
    messages = [Message.user("u", "x" * 400, NOW)]
    assert not counter.exact
    assert counter.count(messages) == ApproximateTokenCounter().count(messages)


def test_for_model_picks_an_installed_encoding() -> None:
    assert TiktokenTokenCounter.for_model("gpt-4").encoding_name == "cl100k_base"
    # gpt-4o uses o200k_base, which is not installed: cl100k_base estimates it
    assert TiktokenTokenCounter.for_model("gpt-4o").encoding_name == "cl100k_base"
    assert TiktokenTokenCounter.for_model("deepseek-chat").exact


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=5))
def test_counts_add_up_message_by_message(contents: list[str]) -> None:
    counter = TiktokenTokenCounter()
    messages = [Message.user(f"u{i}", text, NOW) for i, text in enumerate(contents)]
    assert counter.count(messages) == sum(counter.count([m]) for m in messages)
    assert CachedTokenCounter(counter).count(messages) == counter.count(messages)
