"""The Linux shell's read-only forms: a closed list of commands, options and operands.

Each :class:`~adapters.gns3.model._grammar._options.Form` is a command a lab host runs without
changing anything, with only the options that read (``sysctl`` without ``-w``/``-p``/
``--system``, ``ss`` without ``-K``/``-D``, ``dmesg`` without ``-c``/``-C``/``-n``, ``tail``
without ``-f``, ``date`` without ``-s``), every long option the real command has (so a
prefix is resolved as ``getopt_long`` resolves it), and operand shapes: files read only
where :data:`~adapters.gns3.model._grammar._options.FILE` allows (never a device, a socket, a
FIFO or ``/proc/kcore``), hosts as addresses or names, interfaces as names (``ping -c``
at most 100; a command that does not end is the console layer's to interrupt). ``ip``
keeps its own reading (iproute2 expands objects by first match: ``ip l s`` is ``ip link
set``). Values come from the tools' documentation (read for facts, not copied).
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.gns3.model._grammar._options import (
    FILE,
    HOST,
    IFACE,
    KEY,
    NUMBER,
    PATH,
    WORD,
    Check,
    Form,
    Opt,
    Reading,
    count_at_most,
    read_form,
)
from adapters.gns3.model._grammar._words import names

__all__ = ["FORMS", "KNOWN_CHANGES", "SHORT_VALUES"]

_FLAG = Opt()


def _flags(letters: str) -> dict[str, Opt]:
    return dict.fromkeys(letters, _FLAG)


def _longs(text: str, **valued: Check) -> dict[str, Opt]:
    made = dict.fromkeys(names(text), _FLAG)
    made.update({name.replace("_", "-"): Opt(check) for name, check in valued.items()})
    return made


def _known(text: str) -> frozenset[str]:
    return frozenset(names(text))


def _form(name: str, **spec: object) -> Form:
    return Form(name, **spec)  # type: ignore[arg-type]


_HEAD_LONG = _longs("quiet silent verbose", lines=NUMBER, bytes=NUMBER)
_SUMS = _known("binary check tag text ignore-missing quiet status strict warn zero help version")


def _grep_files(reading: Reading) -> str | None:
    files = (
        reading.operands if reading.has("-e") or reading.has("--regexp") else (reading.operands[1:])
    )
    if not files:
        return "grep reads its input without a file: name the file (it must be read-only)"
    return next((why for why in map(FILE, files) if why), None)


def _date(reading: Reading) -> str | None:
    if any(not operand.startswith("+") for operand in reading.operands):
        return "date with a word not starting with '+' sets the clock"
    return None


def _interval(value: str) -> str | None:
    why = NUMBER(value)
    return why or (None if float(value) >= 0.2 else f"an interval of {value} s floods")


def _path_mtu(value: str) -> str | None:
    """``-M``: how ping's own socket discovers the path MTU (``do``: don't fragment)."""
    return None if value in ("do", "want", "dont", "probe") else f"'{value}' is not a -M mode"


def _ping(name: str) -> Form:
    return _form(
        name,
        short={
            **_flags("46nqvDO"),
            "c": Opt(count_at_most(100)),
            "W": Opt(NUMBER),
            "w": Opt(NUMBER),
            "i": Opt(_interval),
            "s": Opt(NUMBER),
            "t": Opt(NUMBER),
            "I": Opt(IFACE),
            "M": Opt(_path_mtu),
        },
        operand=HOST,
        least=1,
        most=1,
    )


def _trace(name: str, extra: str) -> Form:
    values = {"m": Opt(NUMBER), "q": Opt(NUMBER), "w": Opt(NUMBER)}
    return _form(name, short={**_flags(extra), **values}, operand=HOST, least=1, most=1)


_IP_OBJECTS = names(
    "address addrlabel maddress route rule neighbor neighbour ntable ntbl link l2tp fou ila "
    "macsec tunnel tunl tuntap tap token tcpmetrics tcp_metrics monitor xfrm mroute mrule "
    "netns netconf vrf sr nexthop mptcp ioam stats help"
)
_IP_READ_OBJECTS = {"address", "maddress", "route", "rule", "neighbor", "neighbour", "link"}
_IP_OPTIONS = frozenset(
    names(
        "-4 -6 -s -stats -statistics -d -details -br -brief -c -color -j -json -p -pretty "
        "-o -oneline -h -human -r -resolve -a -all -t -timestamp"
    )
)


def _ip(args: Sequence[str]) -> str | None:
    """iproute2's reading: options by its own names, objects by first match, then a
    verb that only shows (``show``/``list``/``lst``, ``route get``)."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        if args[index] not in _IP_OPTIONS and args[index] not in ("-color=never", "-c=never"):
            return f"'ip {args[index]}' is not an ip option known to read without changing"
        index += 1
    if index == len(args):
        return "'ip' alone prints its usage; name what to show"
    typed = args[index]
    obj = next((name for name in _IP_OBJECTS if name.startswith(typed)), None)
    if obj not in _IP_READ_OBJECTS:
        return f"'ip {typed}' is 'ip {obj}', not an object ip shows without changing"
    rest = args[index + 1 :]
    if not rest:
        return None
    verb = rest[0]
    if verb in ("show", "list", "lst") or (obj == "route" and verb == "get"):
        return None
    if len(verb) >= 2 and ("show".startswith(verb) or "list".startswith(verb)):
        return None
    if obj == "route" and len(verb) >= 2 and "get".startswith(verb):
        return None
    return f"'ip {typed} {verb}' can change the host (only show, list and route get read)"


def _ifconfig(args: Sequence[str]) -> str | None:
    if not args or list(args) in (["-a"], ["-s"]):
        return None
    if len(args) == 1 and not args[0].startswith("-"):
        return IFACE(args[0])
    return f"'ifconfig {' '.join(args)}' sets an interface (only 'ifconfig [IFACE]' reads)"


_ETHTOOL_SHOWS = frozenset("iSkgaclmPT")


def _ethtool(args: Sequence[str]) -> str | None:
    if len(args) == 1:
        return IFACE(args[0])
    if len(args) == 2 and args[0][:1] == "-" and args[0][1:] in _ETHTOOL_SHOWS:
        return IFACE(args[1])
    return f"'ethtool {' '.join(args)}' is not one of ethtool's showing forms"


def _echo(args: Sequence[str]) -> str | None:
    return None  # the alphabet leaves echo nothing to expand


_PS_BSD = frozenset(names("aux ax axu auxw auxww axjf"))


_PS = _form(
    "ps",
    short={**_flags("AaefFlHjwxy"), "o": Opt(WORD), "p": Opt(WORD), "C": Opt(WORD), "u": Opt(WORD)},
    long=_longs("forest no-headers", sort=WORD, format=WORD),
    known_long=_known(
        "cols columns context cumulative deselect format forest headers help "
        "info lines no-headers pid ppid quick-pid rows sid sort tty user "
        "version width cgroupns"
    ),
)


def _ps(args: Sequence[str]) -> str | None:
    if len(args) == 1 and args[0] in _PS_BSD:
        return None
    return read_form(args, _PS)[1]


_FORMS: list[Form] = [
    _form(
        "cat",
        short=_flags("AbeEnstTuv"),
        operand=FILE,
        least=1,
        long=_longs(
            "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting"
        ),
        known_long=_known("help version"),
    ),
    _form(
        "head",
        short={**_flags("qv"), "n": Opt(NUMBER), "c": Opt(NUMBER)},
        long=_HEAD_LONG,
        known_long=_known("zero-terminated help version"),
        operand=FILE,
        least=1,
    ),
    _form(
        "tail",
        short={**_flags("qv"), "n": Opt(NUMBER), "c": Opt(NUMBER)},
        long=_HEAD_LONG,
        known_long=_known(
            "follow retry pid sleep-interval max-unchanged-stats zero-terminated help version"
        ),
        operand=FILE,
        least=1,
    ),
    _form(
        "wc",
        short=_flags("lwcmL"),
        operand=FILE,
        least=1,
        long=_longs("lines words bytes chars max-line-length"),
        known_long=_known("files0-from total help version"),
    ),
    _form(
        "grep",
        operand=WORD,
        least=1,
        check=_grep_files,
        short={
            **_flags("ivncwxlLhHoqsEFGy"),
            "m": Opt(NUMBER),
            "A": Opt(NUMBER),
            "B": Opt(NUMBER),
            "C": Opt(NUMBER),
            "e": Opt(WORD),
        },
        long=_longs(
            "ignore-case invert-match line-number count word-regexp line-regexp "
            "files-with-matches files-without-match no-filename with-filename "
            "only-matching quiet silent no-messages extended-regexp fixed-strings "
            "basic-regexp",
            max_count=NUMBER,
            after_context=NUMBER,
            before_context=NUMBER,
            context=NUMBER,
            regexp=WORD,
        ),
        known_long=_known(
            "file recursive dereference-recursive devices directories include "
            "exclude exclude-from exclude-dir binary-files text label "
            "line-buffered null null-data color colour byte-offset initial-tab "
            "binary perl-regexp no-ignore-case help version"
        ),
    ),
    _form(
        "ls",
        short=_flags("aAlhtrSdi1Fns"),
        operand=PATH,
        long=_longs(
            "all almost-all human-readable inode numeric-uid-gid reverse size directory classify"
        ),
        known_long=_known(
            "author escape block-size ignore-backups color dired file-type "
            "format full-time group-directories-first no-group si "
            "dereference-command-line dereference-command-line-symlink-to-dir "
            "hide hyperlink indicator-style ignore kibibytes literal "
            "hide-control-chars show-control-chars quote-name quoting-style "
            "recursive sort time time-style tabsize width context zero "
            "dereference help version"
        ),
    ),
    _form(
        "stat",
        short=_flags("Lft"),
        long=_longs("dereference file-system terse"),
        known_long=_known("format printf cached help version"),
        operand=PATH,
        least=1,
    ),
    _form(
        "readlink",
        short=_flags("femnqsv"),
        operand=PATH,
        least=1,
        long=_longs(
            "canonicalize canonicalize-existing canonicalize-missing no-newline "
            "quiet silent verbose"
        ),
        known_long=_known("zero help version"),
    ),
    _form(
        "realpath",
        short=_flags("emLPqs"),
        operand=PATH,
        least=1,
        long=_longs(
            "canonicalize-existing canonicalize-missing logical physical quiet strip no-symlinks"
        ),
        known_long=_known("relative-to relative-base zero help version"),
    ),
    _form("basename", operand=WORD, least=1, most=2),
    _form("dirname", operand=WORD, least=1),
    *(
        _form(
            tool,
            short=_flags("bt"),
            long=_longs("binary text tag"),
            known_long=_SUMS,
            operand=FILE,
            least=1,
        )
        for tool in ("md5sum", "sha1sum", "sha256sum")
    ),
    _form("pwd", short=_flags("LP")),
    _form("whoami"),
    _form("tty"),
    _form("nproc", long=_longs("all"), known_long=_known("ignore help version")),
    _form("groups", operand=WORD),
    _form(
        "id",
        short=_flags("ugGnrz"),
        operand=WORD,
        most=1,
        long=_longs("user group groups name real zero"),
        known_long=_known("context help version"),
    ),
    _form(
        "uname",
        short=_flags("asnrvmpio"),
        long=_longs(
            "all kernel-name nodename kernel-release kernel-version machine "
            "processor hardware-platform operating-system"
        ),
        known_long=_known("help version"),
    ),
    _form(
        "uptime", short=_flags("ps"), long=_longs("pretty since"), known_long=_known("help version")
    ),
    _form(
        "free",
        short=_flags("bkmghtwlv"),
        long=_longs(
            "bytes kilo mega giga tera peta human total wide lohi si committed "
            "kibi mebi gibi tebi pebi"
        ),
        known_long=_known("seconds count help version"),
    ),
    _form(
        "df",
        short=_flags("hHTiakPl"),
        operand=PATH,
        long=_longs("human-readable si print-type inodes all local portability"),
        known_long=_known("block-size exclude-type output sync total type no-sync help version"),
    ),
    _form("lsmod"),
    _form(
        "lscpu",
        short=_flags("aebcpJxy"),
        known_long=_known(
            "all online offline bytes caches extended json parse sysroot hex "
            "physical output-all help version"
        ),
    ),
    _form("who"),
    _form("w", short=_flags("hsuif"), operand=WORD, most=1),
    _form("true", operand=WORD, custom=_echo),
    _form("false", operand=WORD, custom=_echo),
    _form("echo", operand=WORD, custom=_echo),
    _form("printenv", operand=WORD),
    _form("which", short=_flags("as"), operand=WORD, least=1),
    _form("env"),
    _form(
        "hostname",
        short=_flags("aAdfiIsy"),
        long=_longs("alias all-fqdns all-ip-addresses domain fqdn long ip-address short nis yp"),
        known_long=_known("boot file help version verbose"),
    ),
    _form(
        "date",
        short={**_flags("uR"), "I": Opt(WORD, optional=True)},
        operand=WORD,
        most=1,
        check=_date,
        long={
            **_longs("utc universal rfc-email"),
            "iso-8601": Opt(WORD, optional=True),
            "rfc-3339": Opt(WORD),
        },
        known_long=_known("date debug file reference resolution set rfc-822 rfc-2822 help version"),
    ),
    _form(
        "ip",
        custom=_ip,
        summary="ip [-br -o -s -d -4 -6 …] address|route|link|neighbour|"
        "rule|maddress [show|list|route get …]",
    ),
    _form("ifconfig", custom=_ifconfig, summary="ifconfig [-a | -s | IFACE]"),
    _form("route", short=_flags("neFCv46")),
    _form(
        "arp",
        short={**_flags("nave"), "i": Opt(IFACE)},
        long={**_longs("verbose all numeric"), "device": Opt(IFACE)},
        known_long=_known("delete file set protocol hw-type use-device help version"),
    ),
    _form(
        "sysctl",
        short={**_flags("aAXneNb"), "r": Opt(WORD)},
        operand=KEY,
        long={**_longs("all values ignore names binary deprecated"), "pattern": Opt(WORD)},
        known_long=_known("dry-run help load quiet system version write"),
    ),
    _form(
        "dmesg",
        short={**_flags("THxktrdu"), "l": Opt(WORD)},
        long={
            **_longs("ctime human decode kernel notime raw show-delta userspace nopager json"),
            "level": Opt(WORD),
        },
        known_long=_known(
            "buffer-size clear read-clear console-level console-off "
            "console-on file facility force-prefix follow follow-new color "
            "noescape syslog reltime since until time-format help version"
        ),
    ),
    _form("ethtool", custom=_ethtool, summary="ethtool [-i|-S|-k|-g|-a|-c|-l|-m|-P|-T] IFACE"),
    _form(
        "ss",
        short={**_flags("tualnpemois46xwrHOM0"), "f": Opt(WORD), "A": Opt(WORD)},
        operand=WORD,
        long={
            **_longs(
                "numeric resolve all listening options extended memory info processes "
                "summary tcp udp raw unix ipv4 ipv6 oneline no-header mptcp packet"
            ),
            "family": Opt(WORD),
            "query": Opt(WORD),
            "socket": Opt(WORD),
        },
        known_long=_known(
            "threads tos cgroup tipcinfo bpf-maps bpf events context contexts "
            "net kill diag filter dccp sctp vsock tipc xdp inet-sockopt help "
            "version"
        ),
    ),
    _form(
        "netstat",
        short=_flags("rnatulpiseW46xwv"),
        long=_longs(
            "route numeric all tcp udp listening program programs interfaces "
            "statistics extend wide raw unix verbose numeric-hosts numeric-ports "
            "numeric-users"
        ),
        known_long=_known(
            "version help masquerade symbolic timers continuous protocol "
            "udplite sctp inet ipx ax25 netrom x25 ddp fib cache notrim groups"
        ),
    ),
    _ping("ping"),
    _ping("ping6"),
    _trace("traceroute", "n46IT"),
    _trace("traceroute6", "nIT"),
    _trace("tracepath", "n46b"),
    _trace("tracepath6", "nb"),
    _form("nslookup", operand=WORD, least=1, most=2),
    _form(
        "host",
        short={**_flags("av46"), "t": Opt(WORD), "W": Opt(NUMBER)},
        operand=WORD,
        least=1,
        most=2,
    ),
    _form(
        "dig",
        custom=lambda args: next(
            (
                f"'dig {arg}' is not read-only here (no dig options but names, @server and +opts)"
                for arg in args
                if arg.startswith("-")
            ),
            None,
        ),
        summary="dig [@SERVER] NAME [TYPE] [+OPT…]",
    ),
    _form("lsblk", short=_flags("afmpltd")),
    _form("ps", custom=_ps, summary="ps [aux | -ef …]"),
]

FORMS: dict[str, Form] = {form.name: form for form in _FORMS}

#: The short options of a command that take a value, for reading a line that is not
#: read-only (the forbidden list: ``ping -c1f`` is a count, ``ping -fc 1`` a flood).
SHORT_VALUES: dict[str, str] = {
    "ping": "cefFiIlmMNpQsStTwW",
    "traceroute": "AfFgimNpqsStwz",
    "tracepath": "lmp",
}

#: Words the shell knows as commands that can change something (for the generic rule).
KNOWN_CHANGES: frozenset[str] = frozenset(
    names(
        "sh bash ash dash zsh busybox sudo su nohup timeout exec eval source xargs nice "
        "rm mv cp ln mkdir rmdir touch chmod chown dd tee truncate kill killall pkill reboot "
        "shutdown halt poweroff init systemctl service ifup ifdown dhclient udhcpc iptables "
        "ip6tables nft tc bridge vi vim nano sed awk python python3 perl curl wget apt "
        "apt-get apk yum dnf mount umount modprobe insmod rmmod crontab passwd useradd "
        "userdel vtysh find sort uniq tcpdump"
    )
)
