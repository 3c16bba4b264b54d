"""The HTTP service (Litestar): routes under ``/v3/copilot``, SSE, auth, errors, OpenAPI.

:func:`create_web_app` builds the application around collaborators built
elsewhere (:class:`WebDependencies`); it never imports a container or another
adapter. It also serves the chat page at ``/`` (``docs/ui.md``). See ``docs/api.md``
and ``docs/sse-protocol.md``.
"""

from adapters.web._app import API_PREFIX, create_web_app
from adapters.web._auth import CachingAuthenticator, Caller, bearer_token
from adapters.web._contracts import (
    Gns3Directory,
    LLMConfigRepository,
    ReadinessCheck,
    SkillsReloader,
    WebDependencies,
    WebSettings,
)
from adapters.web._directory import LoginRequest, RenderRequest
from adapters.web._errors import status_for
from adapters.web._markdown import MarkdownRenderer
from adapters.web._observers import PrometheusTurnMetrics, StructlogTurnObserver
from adapters.web._schemas import BASE_URL_PATTERN, ChatRequest, LLMConfigBody, RenameRequest
from adapters.web._state import install_dependencies
from adapters.web._wire import copilot_event

__all__ = [
    "API_PREFIX",
    "BASE_URL_PATTERN",
    "CachingAuthenticator",
    "Caller",
    "ChatRequest",
    "Gns3Directory",
    "LLMConfigBody",
    "LLMConfigRepository",
    "LoginRequest",
    "MarkdownRenderer",
    "PrometheusTurnMetrics",
    "ReadinessCheck",
    "RenameRequest",
    "RenderRequest",
    "SkillsReloader",
    "StructlogTurnObserver",
    "WebDependencies",
    "WebSettings",
    "bearer_token",
    "copilot_event",
    "create_web_app",
    "install_dependencies",
    "status_for",
]
