"""Cisco IOS/IOS-XE, Arista EOS and FRR's vtysh: exec commands by unique prefix.

IOS takes an exact word, then one of its built-in exec aliases (``s`` = ``show``, ``p`` =
``ping``, ``w`` = ``where``, ``u``/``un`` = ``undebug``, ``r`` = ``resume``, ``lo`` =
``logout``, ``h`` = ``help``), then a unique prefix (``sh ip int br``, ``wr`` = ``write``,
``wr er`` = ``write erase``, ``rel`` = ``reload``). ``do <command>`` (configuration mode)
runs the exec command. IOS takes one ``|`` filter (what follows is its pattern); EOS
takes several; vtysh has only ``| include``. vtysh's read-only forms take no argument that
a shell would run as something else: ``ping``/``traceroute`` without an option, ``list``
and ``who`` alone, no ``find`` (a console left in bash runs ``find … -delete``).
"""

from __future__ import annotations

from adapters.gns3.model._grammar._cli import CliGrammar
from adapters.gns3.model._grammar._words import level, names, rules
from adapters.gns3.model._platforms import DeviceKind

__all__ = ["ARISTA_EOS", "CISCO_IOS", "FRR"]

_IOS_WRITE = level("erase", "memory", "network", "terminal")
_IOS_TERMINAL = level(
    *names(
        "autohangup data-character-bits databits default dispatch-character dispatch-timeout "
        "domain-lookup download editing escape-character exec-character-bits flowcontrol "
        "full-help help history hold-character ip keymap-type lat length location monitor no "
        "notify padding parity rxspeed special-character-bits speed start-character stopbits "
        "stop-character telnet terminal-type transport txspeed width"
    )
)
_IOS_WORDS = names(
    "access-enable access-profile access-template archive auto bfe calendar cd clear clock "
    "cns configure connect copy crypto debug delete diagnostic dir disable disconnect dot1x "
    "enable eou erase event exit format fsck help ip ipv6 lock login logout mkdir monitor "
    "more mpls mrinfo mstat mtrace name-connection no ping pwd release reload rename renew "
    "resume rmdir rsh send set setup show slip squeeze ssh start-chat systat tclquit tclsh "
    "telnet test traceroute tunnel udld undebug upgrade verify where which-route x28 x3"
)

CISCO_IOS = CliGrammar(
    DeviceKind.CISCO_IOS,
    level(
        *_IOS_WORDS,
        ("write", _IOS_WRITE),
        ("terminal", _IOS_TERMINAL),
        aliases={
            "h": "help",
            "lo": "logout",
            "p": "ping",
            "r": "resume",
            "s": "show",
            "u": "undebug",
            "un": "undebug",
            "w": "where",
        },
    ),
    rules(
        "show",
        "ping",
        "traceroute",
        "dir",
        "more",
        "pwd",
        "where",
        "help",
        "systat",
        "which-route",
        "terminal length",
        "terminal width",
        alone=("enable", "disable"),
    ),
    pipes=level(
        "append", "begin", "count", "exclude", "format", "include", "redirect", "section", "tee"
    ),
    read_pipes=frozenset({"begin", "count", "exclude", "include", "section"}),
    pipe_once=True,
    enter_words=frozenset({"do"}),
)

_EOS_WORDS = names(
    "agent bash boot cd clear cli clock configure copy daemon debug delete diff dir disable "
    "enable exit format install ip ipv6 logout monitor more mkdir no ping platform pwd "
    "reload rename reset rmdir routing-context schedule send session show ssh telnet test "
    "traceroute undebug watch zerotouch"
)
ARISTA_EOS = CliGrammar(
    DeviceKind.ARISTA_EOS,
    level(
        *_EOS_WORDS,
        ("write", level("erase", "memory", "terminal")),
        ("terminal", level("dont-ask", "length", "monitor", "width", "session")),
    ),
    rules(
        "show",
        "ping",
        "traceroute",
        "dir",
        "more",
        "pwd",
        "diff",
        "terminal length",
        "terminal width",
        alone=("enable", "disable"),
    ),
    pipes=level(
        "append",
        "begin",
        "exclude",
        "grep",
        "head",
        "include",
        "json",
        "less",
        "more",
        "no-more",
        "nz",
        "redirect",
        "section",
        "tail",
        "tee",
        "wc",
    ),
    read_pipes=frozenset(
        {
            "begin",
            "exclude",
            "grep",
            "head",
            "include",
            "json",
            "no-more",
            "nz",
            "section",
            "tail",
            "wc",
        }
    ),
    enter_words=frozenset({"do"}),
)

_FRR_WORDS = names(
    "clear configure copy debug disable enable end exit find list mtrace no output ping "
    "quit rpki show start-shell telnet traceroute undebug watchfrr who"
)
FRR = CliGrammar(
    DeviceKind.FRR,
    level(
        *_FRR_WORDS,
        ("write", level("file", "integrated", "memory", "terminal")),
        ("terminal", level("length", "monitor", "no", "paginate")),
    ),
    # No `find REGEX`: typed into the shell under vtysh by mistake, `find` deletes files.
    rules("show", "terminal length", alone=("list", "who"), plain=("ping", "traceroute")),
    pipes=level("include"),  # vtysh's only filter (lib/command.c: `| include REGEX`)
    read_pipes=frozenset({"include"}),
    enter_words=frozenset({"do"}),
)
