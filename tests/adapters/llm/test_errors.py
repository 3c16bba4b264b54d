"""translate_error on failures the wire tests cannot easily provoke."""

from __future__ import annotations

import email.utils
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.llm import ProviderInfo, redact, translate_error
from copilot_core.errors import (
    LLMAuthenticationError,
    LLMContextLengthError,
    LLMError,
    LLMModelNotFoundError,
    LLMRateLimitedError,
    LLMStreamInterruptedError,
    LLMUnavailableError,
)

ROOT = Path(__file__).resolve().parents[3]
SECRET = "sk-proj-AbCdEfGhIjKlMnOp"
PROVIDER = ProviderInfo("http://llm.local:8000/v1", "qwen2.5", (SECRET,))


class StatusFailure(Exception):
    """Shaped like an SDK status error: status_code, response.headers, body."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status
        self.response = httpx.Response(status, headers=headers or {})
        self.body: dict[str, Any] = {"error": {"message": message}}


def test_transport_errors_depend_on_whether_the_reply_had_started() -> None:
    before = translate_error(httpx.ConnectError("refused"), PROVIDER, streaming=False)
    during = translate_error(httpx.ReadError("reset"), PROVIDER, streaming=True)
    assert isinstance(before, LLMUnavailableError)
    assert "http://llm.local:8000/v1" in str(before)
    assert isinstance(during, LLMStreamInterruptedError)


def test_httpx2_transport_errors_are_recognised() -> None:
    httpx2 = pytest.importorskip("httpx2")
    error = translate_error(httpx2.RemoteProtocolError("peer closed"), PROVIDER, streaming=True)
    assert isinstance(error, LLMStreamInterruptedError)


def test_timeouts() -> None:
    assert isinstance(
        translate_error(TimeoutError(), PROVIDER, streaming=False), LLMUnavailableError
    )
    assert isinstance(
        translate_error(httpx.ReadTimeout("slow"), PROVIDER, streaming=True),
        LLMStreamInterruptedError,
    )


def test_retry_after_as_http_date_and_in_milliseconds() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    dated = translate_error(
        StatusFailure(429, "slow down", {"retry-after": when}), PROVIDER, streaming=False
    )
    millis = translate_error(
        StatusFailure(429, "slow down", {"retry-after-ms": "1500"}), PROVIDER, streaming=False
    )
    assert isinstance(dated, LLMRateLimitedError)
    assert dated.retry_after is not None
    assert 25 <= dated.retry_after <= 30
    assert isinstance(millis, LLMRateLimitedError)
    assert millis.retry_after == 1.5


def test_exhausted_quota_says_so() -> None:
    error = translate_error(
        StatusFailure(429, "You exceeded your current quota"), PROVIDER, streaming=False
    )
    assert isinstance(error, LLMRateLimitedError)
    assert "quota" in str(error)
    assert "billing" in str(error)


def test_forbidden_is_an_authentication_error() -> None:
    error = translate_error(StatusFailure(403, "no access"), PROVIDER, streaming=False)
    assert isinstance(error, LLMAuthenticationError)


def test_404_without_a_model_hint_points_at_the_base_url() -> None:
    error = translate_error(StatusFailure(404, "Not Found"), PROVIDER, streaming=False)
    assert isinstance(error, LLMModelNotFoundError)
    assert "/v1" in str(error)


def test_provider_text_is_quoted_with_keys_masked() -> None:
    error = translate_error(
        StatusFailure(422, f"key {SECRET} and sk-other-1234567890 are odd"),
        PROVIDER,
        streaming=False,
    )
    assert type(error) is LLMError
    assert SECRET not in str(error)
    assert "sk-other-1234567890" not in str(error)
    assert "HTTP 422" in str(error)


def test_core_errors_pass_through_and_repr_hides_secrets() -> None:
    original = LLMUnavailableError("already translated")
    assert translate_error(original, PROVIDER, streaming=False) is original
    assert SECRET not in repr(PROVIDER)


def test_redact_masks_given_secrets_and_key_shapes() -> None:
    assert redact(f"a {SECRET} b", (SECRET,)) == "a *** b"
    assert redact("token sk-abcdef123456") == "token sk-***"
    assert redact("nothing here") == "nothing here"


def test_a_short_api_key_is_masked_where_it_stands_and_the_servers_words_are_left_whole() -> None:
    # A four-character key: masked where it stands, not inside "monkey1".
    local = ProviderInfo("http://127.0.0.1:11434/v1", "qwen2.5", ("key1",))
    error = translate_error(
        StatusFailure(500, "invalid api key key1 for monkey1 on port 9"), local, streaming=False
    )
    assert "the server said: invalid api key *** for monkey1 on port 9" in error.message


def test_a_rate_limit_that_speaks_of_tokens_stays_a_rate_limit() -> None:
    error = translate_error(
        StatusFailure(429, "Too many tokens per minute: context length of requests too high"),
        PROVIDER,
        streaming=False,
    )
    assert isinstance(error, LLMRateLimitedError)


def test_context_length_wording_on_a_400_or_413() -> None:
    for status in (400, 413):
        error = translate_error(
            StatusFailure(status, "prompt is too long: 210000 tokens > 200000 maximum"),
            PROVIDER,
            streaming=False,
        )
        assert isinstance(error, LLMContextLengthError), status
        assert "qwen2.5" in str(error)


def test_the_sdks_own_errors_are_recognised_without_this_module_importing_them() -> None:
    import anthropic
    import ollama
    import openai

    request = httpx.Request("POST", "http://llm.local:8000/v1/messages")
    cut = translate_error(anthropic.APIConnectionError(request=request), PROVIDER, streaming=True)
    assert isinstance(cut, LLMStreamInterruptedError)
    down = translate_error(openai.APIConnectionError(request=request), PROVIDER, streaming=False)
    assert isinstance(down, LLMUnavailableError)
    failed = translate_error(ollama.ResponseError("model crashed", -1), PROVIDER, streaming=True)
    assert isinstance(failed, LLMStreamInterruptedError)
    assert "model crashed" in str(failed)


def test_importing_the_service_loads_no_provider_sdk() -> None:
    """A provider's SDK loads when a model of that provider is built: anthropic alone
    is 3,000 modules and more than a second to import, for a service that may never use
    it."""
    code = (
        "import sys, entrypoints, adapters.llm; "
        "print(' '.join(m for m in ('anthropic', 'openai', 'ollama') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == ""
