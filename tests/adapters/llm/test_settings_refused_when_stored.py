"""LLM settings are checked as the SDKs will read them, when they are stored: a value that
would fail every turn after it (a ``base_url`` ending in DEL made every turn a 500) is an
``InvalidRequestError`` naming the field, and never echoes the key."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from adapters.llm import build_chat_model, parse_llm_settings
from copilot_core.errors import InvalidRequestError

BASE = {"provider": "openai_compatible", "model": "m"}


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/v1\x7f",
        "http://127.0.0.1:9/v 1",
        "http://host\x00/v1",
        "http://127.0.0.1:0/v1",
        "http://127.0.0.1:65536/v1",
        "http://user:secret@127.0.0.1/v1",
        "http://bad..host/v1",
        "http://-host/v1",
        "http://[::1/v1",
        "http://h/[x]",
        "http://h/%zz",
        "http://hôte/v1",
        "ftp://h/v1",
    ],
)
def test_a_base_url_the_http_client_would_refuse_is_refused_naming_the_field(url: str) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        parse_llm_settings({**BASE, "base_url": url})
    assert "base_url" in refused.value.message


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:11434/v1",
        "https://api.deepseek.com/v1",
        "http://ollama_1:11434",
        "http://[::1]:8000/v1",
        "http://h:8000/api/v1?x=1",
        "http://h/a%20b",
        "http://localhost.:65535",
    ],
)
def test_a_base_url_every_client_reads_is_kept_and_builds_every_provider(url: str) -> None:
    for provider in ("openai_compatible", "anthropic", "ollama_native"):
        settings = parse_llm_settings({**BASE, "provider": provider, "base_url": url})
        assert settings.base_url == url.rstrip("/")
        build_chat_model(settings, connect_timeout=2.0)  # the SDK takes it as it is


@pytest.mark.parametrize("key", ["sk-line\nbreak", "sk with space", "sk-é", "sk-\x7f"])
def test_an_api_key_no_http_header_can_carry_is_refused_without_echoing_it(key: str) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        parse_llm_settings({**BASE, "base_url": "http://h/v1", "api_key": key})
    assert "api_key" in refused.value.message
    assert key not in refused.value.message


def test_blanks_around_a_pasted_key_are_dropped() -> None:
    settings = parse_llm_settings({**BASE, "base_url": "http://h/v1", "api_key": " sk-abc\n"})
    assert settings.api_key == SecretStr("sk-abc")
