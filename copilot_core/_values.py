"""``@value``: the decorator of the small objects that stream by the thousand.

Type checkers see a frozen dataclass (assigning to a field is an error); at run time
it is a plain slotted dataclass, because a frozen dataclass's ``__init__`` costs about
2.5 times as much (it sets every field through ``object.__setattr__``), and a long
answer creates several of these per token (a delta, an event, its stamped envelope).
Instances compare and hash by value, like frozen ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from typing_extensions import dataclass_transform

__all__ = ["value"]

T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def value(cls: type[T]) -> type[T]:
    """A value class: immutable to the type checker, cheap to build at run time."""
    make: Callable[[type[T]], type[T]] = dataclass(slots=True, unsafe_hash=True)
    return make(cls)
