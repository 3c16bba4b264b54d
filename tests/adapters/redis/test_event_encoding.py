"""What the Redis turn log writes for an event: a streamed token is written out
directly, and must be the same JSON that encoding its record gives (the other replicas
decode it with the record's reader)."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from adapters.redis._turnlog import _encode
from copilot_core.events import ContentEvent, ErrorEvent, event_from_record, event_to_record

#: Any code point, lone surrogates and control characters included.
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))


def record_json(event: object) -> str:
    return json.dumps(event_to_record(event), ensure_ascii=True, separators=(",", ":"))  # type: ignore[arg-type]


@given(ANY_TEXT, st.booleans())
@example('\ud800 \x00 \u2028 "quoted" \\ é 漢 🙂', False)
def test_a_token_is_written_as_its_record_encodes(text: str, from_answer: bool) -> None:
    event = ContentEvent(text, from_answer)
    written = _encode(event)
    assert written == record_json(event)
    assert event_from_record(json.loads(written)) == event


def test_other_events_are_their_record_as_json() -> None:
    event = ErrorEvent("GNS3 at http://127.0.0.1:9 cannot be reached", "gns3_unavailable")
    assert _encode(event) == record_json(event)
