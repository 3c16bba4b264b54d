"""Project and session ids at the edge: UUIDs, in one canonical spelling.

GNS3 project ids and copilot session ids are UUIDs. A UUID can be written several
ways (upper case, without hyphens); GNS3 accepts them all, and the project's database
path and the session's key are built from the id, so every spelling is turned into
the canonical one (lowercase, hyphenated) before anything else sees it: each project
has one database and each session one key, however a client writes them. Anything
that is not a UUID is refused (422) before any lookup.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Final

from litestar.params import PathParameter
from pydantic import AfterValidator, Field

__all__ = ["UUID_PATTERN", "ProjectId", "SessionId", "SessionIdField", "canonical_uuid"]

_HEX = "[0-9A-Fa-f]"

#: A UUID: 32 hex digits, either hyphenated 8-4-4-4-12 or not at all, in any case.
UUID_PATTERN: Final = (
    rf"^(?:{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}|{_HEX}{{32}})$"
)


def canonical_uuid(value: str) -> str:
    """``value`` (matching :data:`UUID_PATTERN`) in lowercase hyphenated form."""
    return str(uuid.UUID(hex=value))


#: ``{project_id}`` in a path, as the client wrote it (see :func:`canonical_uuid`).
ProjectId = Annotated[
    str,
    PathParameter(
        pattern=UUID_PATTERN,
        description="The GNS3 project's id: a UUID, hyphenated or not, in any case.",
    ),
]

#: ``{session_id}`` in a path, as the client wrote it (see :func:`canonical_uuid`).
SessionId = Annotated[
    str,
    PathParameter(
        pattern=UUID_PATTERN,
        description="The session's id (a UUID, as in every event's session_id).",
    ),
]

#: A session id in a body: validated and made canonical by the model.
SessionIdField = Annotated[str, Field(pattern=UUID_PATTERN), AfterValidator(canonical_uuid)]
