"""The real clock and id factory."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

__all__ = ["SystemClock", "UuidIdFactory"]


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class UuidIdFactory:
    def new_id(self) -> str:
        return str(uuid.uuid4())
