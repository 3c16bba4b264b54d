"""Which session: the one value every operation on a session is named by.

A session is one user's conversation in one GNS3 project, so it is named by three ids,
never by its own id alone: another user's session with the same ids behaves exactly like
one that does not exist. :class:`SessionKey` carries the three together.

The operations that took the three as separate arguments (version 0.1) still accept them,
with a :class:`DeprecationWarning`, until version 0.3 (:func:`takes_session_key`).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from copilot_core.errors import InvalidRequestError, SessionNotFoundError

if TYPE_CHECKING:
    from copilot_core._session import Session
    from copilot_core._store_ports import CheckpointStore

__all__ = ["SessionKey", "owned_session", "takes_session_key"]

_FIELDS = ("project_id", "session_id", "user_id")


@dataclass(frozen=True, slots=True)
class SessionKey:
    """One user's session in one project: ``SessionKey(project_id, session_id, user_id)``."""

    project_id: str
    session_id: str
    user_id: str

    def __post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"SessionKey.{name} must be a string, not {value!r}")
            if not value:  # an id from a request: the request is at fault
                raise InvalidRequestError(f"{name} must not be empty.")

    def __str__(self) -> str:
        return f"{self.project_id}/{self.session_id} ({self.user_id})"


async def owned_session(store: CheckpointStore, key: SessionKey) -> Session:
    """The session ``key`` names, if it is its user's: another user's session is
    :class:`SessionNotFoundError`, exactly like one that does not exist."""
    session = await store.get_session(key.project_id, key.session_id)
    if session is None or session.user_id != key.user_id:
        raise SessionNotFoundError(key.session_id)
    return session


_Owner = TypeVar("_Owner")
_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def takes_session_key(
    method: Callable[Concatenate[_Owner, SessionKey, _Params], _Result],
) -> Callable[Concatenate[_Owner, SessionKey, _Params], _Result]:
    """Let ``method(self, key, ...)`` still be called the old way, with
    ``project_id, session_id, user_id`` (positional or by name) in place of ``key``,
    warning that the old way goes away (:class:`DeprecationWarning`)."""
    name = method.__qualname__

    @functools.wraps(method)
    def accepting(self: _Owner, *args: Any, **kwargs: Any) -> _Result:
        if (args and isinstance(args[0], SessionKey)) or "key" in kwargs:
            return method(self, *args, **kwargs)
        key, rest = _legacy_key(name, args, kwargs)
        return method(self, key, *rest, **kwargs)

    return cast(Callable[Concatenate[_Owner, SessionKey, _Params], _Result], accepting)


def _legacy_key(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[SessionKey, tuple[Any, ...]]:
    """The key of an old-style call (its three ids taken off ``args`` and ``kwargs``)."""
    ids: list[Any] = list(args[:3])
    rest = args[len(ids) :]
    for field in _FIELDS[len(ids) :]:
        if field not in kwargs:
            raise TypeError(
                f"{name}() takes a SessionKey (or, deprecated, project_id, session_id and "
                f"user_id); {field} is missing"
            )
        ids.append(kwargs.pop(field))
    warnings.warn(
        f"{name}(project_id, session_id, user_id, ...) is deprecated and goes away in "
        "version 0.3: pass a copilot_core.SessionKey",
        DeprecationWarning,
        stacklevel=3,
    )
    return SessionKey(*ids), rest
