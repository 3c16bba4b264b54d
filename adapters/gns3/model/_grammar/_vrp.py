"""Huawei VRP user view: unique prefixes (``dis`` = ``display``, ``sys`` =
``system-view``), ``| include``/``| begin``/``| exclude``/``| count``/``| section``."""

from __future__ import annotations

from adapters.gns3.model._grammar._cli import CliGrammar
from adapters.gns3.model._grammar._words import level, names, rules
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["HUAWEI_VRP"]

_WORDS = names(
    "cd clear clock compare copy debugging delete dir display format free ftp "
    "language-mode license local-user lock mkdir more move patch ping pwd quit reboot "
    "refresh rename reset return rmdir save schedule screen-length screen-width send ssh "
    "startup stelnet super system-view telnet terminal test-aaa tftp tracert undelete undo "
    "unzip upgrade zip"
)
HUAWEI_VRP = CliGrammar(
    DeviceKind.HUAWEI_VRP,
    level(*_WORDS),
    rules("display", "ping", "tracert", "dir", "more", "pwd"),
    pipes=level("begin", "count", "exclude", "include", "no-more", "refresh", "section"),
    read_pipes=frozenset({"begin", "count", "exclude", "include", "no-more", "section"}),
)
