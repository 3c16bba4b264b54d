"""The HTTP service (Litestar): routes under ``/v3/copilot``, SSE, auth, errors, OpenAPI.

:func:`create_web_app` builds the application around collaborators built
elsewhere (:class:`WebDependencies`); it never imports a container or another
adapter. See ``docs/api.md`` and ``docs/sse-protocol.md``.
"""

from adapters.web._app import API_PREFIX, create_web_app
from adapters.web._auth import CachingAuthenticator, Caller, bearer_token
from adapters.web._contracts import (
    LLMConfigRepository,
    ReadinessCheck,
    SkillsReloader,
    WebDependencies,
    WebSettings,
)
from adapters.web._errors import status_for
from adapters.web._schemas import ChatRequest, LLMConfigBody, RenameRequest
from adapters.web._state import install_dependencies

__all__ = [
    "API_PREFIX",
    "CachingAuthenticator",
    "Caller",
    "ChatRequest",
    "LLMConfigBody",
    "LLMConfigRepository",
    "ReadinessCheck",
    "RenameRequest",
    "SkillsReloader",
    "WebDependencies",
    "WebSettings",
    "bearer_token",
    "create_web_app",
    "install_dependencies",
    "status_for",
]
