"""Read-only is a closed allow-list on a closed alphabet (issue 35, cases 1, 4, 5b and the
shell half of 8): each escape found on the real lab is a change here, the forbidden list
sees a shell command's options in any order and its command family, and a hypothesis
property builds lines from the risky constructs and checks that whatever is judged
read-only is written in the safe alphabet and is one of the listed forms."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adapters.gns3 import DEFAULT_FORBIDDEN_COMMANDS, DeviceKind, ForbiddenCommandFilter
from adapters.gns3.model._grammar import judge, read_only_list
from adapters.gns3.model._grammar._alphabet import EXTRA
from adapters.gns3.model._grammar._linux import FORMS
from tests.readonly_lines import risky_line

LINUX = DeviceKind.LINUX
FRR = DeviceKind.FRR

# Each changed a real device of the lab while judged read-only (issue 35).
ESCAPES = [
    # 1: bash starts a comment only at the start of a word; shlex dropped the rest.
    ("echo a#; ip link set eth1 down", "'#'"),
    ("false a#|| ip link set eth1 down", "'#'"),
    ("true x#&& ip addr add 10.9.9.9/24 dev eth1", "'#'"),
    # 4: GNU long-option prefixes and combined flags.
    ("sysctl --sys", "--system"),
    ("sysctl -qp", "'-q'"),
    ("sysctl -p", "'-p'"),
    ("sysctl --lo /etc/sysctl.conf", "--load"),
    ("ss --ki", "--kill"),
    ("ss -D /tmp/x", "'-D'"),
    ("ss --diag=/tmp/x", "--diag"),
    ("ss -tK", "'-K'"),
    ("cat /dev/urandom", "/dev/urandom"),
    ("head -c 10 /dev/zero", "/dev/zero"),
    ("cat /proc/kcore", "/proc/kcore"),
    ("cat /etc/../dev/urandom", ".."),
    ("cat dev/urandom", "absolute path"),
    ("dmesg --cl", "--clear"),
    ("dmesg -c", "'-c'"),
    ("tail -f /var/log/syslog", "'-f'"),
    ("date 010100002030", "sets the clock"),
    ("date -s 2030-01-01", "'-s'"),
    ("hostname attacker", "argument"),
    ("sysctl net.ipv4.ip_forward=0", "'='"),
    ("grep -r x /", "'-r'"),
    ("grep root", "without a file"),
]


@pytest.mark.parametrize(("line", "named"), ESCAPES)
def test_each_escape_found_on_the_lab_is_a_change_and_says_why(line: str, named: str) -> None:
    verdict = judge(line, LINUX)
    assert verdict.changes is True, line
    assert named in (verdict.reason or ""), verdict.reason


def test_a_hash_reason_says_it_in_plain_words() -> None:
    reason = judge("echo a#; ip link set eth1 down", LINUX).reason or ""
    assert reason.startswith("'#' is outside the characters a read-only command may use")


@pytest.mark.parametrize(
    "line",
    [
        "ip -o addr",
        "ip -4 route show",
        "ip link show eth1",
        "sysctl net.ipv4.ip_forward",
        "sysctl -a",
        "sysctl --all",
        "sysctl --val net.ipv4.ip_forward",  # --values, by unique prefix
        "ss -tuln",
        "ss --tcp --listening",
        "cat /etc/hosts",
        "cat /proc/net/route",
        "head -n 5 /etc/passwd",
        "grep -c root /etc/passwd",
        "ls -la /dev",  # listing is not reading
        "ping -c 3 -W 2 10.0.0.1",
        "ping -c 2 fe80::1%eth0",
        "date +%s",
        "uname -a",
        "ps aux",
        "dmesg -T",
        "echo hello",
    ],
)
def test_listed_forms_stay_read_only(line: str) -> None:
    verdict = judge(line, LINUX)
    assert verdict.changes is False, verdict.reason


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("find /etc/frr -name '*.conf' -delete", "not on its read-only list"),
        ("find /etc/frr", "not on its read-only list"),
        ("list permutations", "not on its read-only list"),
        ("ping -f 10.0.0.1", "not on its read-only list"),
        ("show running-config | begin router", "not a filter"),
        ("show ip route # x", "'#'"),
        ("show ip route; reboot", "';'"),
        ("show 'x'", '"\'"'),
    ],
)
def test_vtysh_has_no_argument_taking_form_a_shell_would_run(line: str, named: str) -> None:
    """Case 5b: a console left in bash runs what vtysh's read-only list lets through."""
    verdict = judge(line, FRR)
    assert verdict.changes is True, line
    assert named in (verdict.reason or ""), verdict.reason


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        (DeviceKind.CISCO_IOS, "show run | include a | redirect flash:x"),
        (DeviceKind.CISCO_IOS, "show ip route ! x"),
        (DeviceKind.ARISTA_EOS, "show run > flash:x"),
        (DeviceKind.JUNIPER_JUNOS, 'show route | match "a|b"'),
        (DeviceKind.HUAWEI_VRP, "display ip routing-table | include *"),
        (DeviceKind.VPCS, "show ip # x"),
    ],
)
def test_the_network_clis_have_a_closed_alphabet_too(kind: DeviceKind, line: str) -> None:
    assert judge(line, kind).changes is True


@pytest.mark.parametrize(
    ("line", "entry"),
    [
        ("ping -fc 1000 10.0.0.1", "ping -f"),
        ("ping -c 1000 -f 10.0.0.1", "ping -f"),
        ("ping -c 5 -i 0.2 -f 10.0.0.1", "ping -f"),
        ("ping6 -f ::1", "ping -f"),
        ("/bin/ping -qf 10.0.0.1", "ping -f"),
        ("sudo ping -fc 9 10.0.0.1", "ping -f"),
        ("traceroute6 ::1", "traceroute"),
        ("tracepath6 ::1", "tracepath"),
        ("echo a#; traceroute 10.0.0.1", "traceroute"),
        ("ls;tr''aceroute 10.0.0.1", "traceroute"),
        ('echo x && "traceroute" 10.0.0.1', "traceroute"),
        ("echo $(traceroute 10.0.0.1)", "traceroute"),
        ("ping${IFS}-f${IFS}10.0.0.1", "ping -f"),
    ],
)
def test_the_shells_forbidden_list_sees_options_in_any_order_and_families(
    line: str, entry: str
) -> None:
    reason = ForbiddenCommandFilter().reason(line, LINUX)
    assert reason is not None and f"'{entry}'" in reason, (line, reason)
    assert ForbiddenCommandFilter().reason(line) is not None  # the platform unknown


@pytest.mark.parametrize(
    "line", ["ping -c 3 10.0.0.1", "ping -c1f 10.0.0.1", "echo '# traceroute'", "ping -I eth0f x"]
)
def test_a_count_or_a_comment_is_not_a_forbidden_option(line: str) -> None:
    assert ForbiddenCommandFilter().reason(line, LINUX) is None


def test_read_only_list_counts_each_platforms_forms() -> None:
    counts = {kind: len(read_only_list(kind)) for kind in DeviceKind}
    assert counts[LINUX] == len(FORMS)
    assert counts[FRR] == 6  # show, terminal length, list/who alone, ping/traceroute plain
    assert not any("find" in form for form in read_only_list(FRR))
    assert all(count > 0 for count in counts.values()), counts


# ------------------------------------------------------------------ property
DANGEROUS = {  # an independent list of what each command must never be given
    "sysctl": ("--system", "--load", "--write", "-w", "-p", "-f", "="),
    "ss": ("--kill", "--diag", "--filter", "--events", "-K", "-D", "-F", "-E", "-N"),
    "dmesg": ("--clear", "--read-clear", "--console", "--follow", "-c", "-C", "-n", "-D",
              "-E", "-w", "-W"),
    "tail": ("--follow", "-f", "-F"),
    "date": ("--set", "--file", "-s", "-f"),
    "hostname": ("--boot", "--file", "-b", "-F"),
}  # fmt: skip


@st.composite
def risky_lines(draw: st.DrawFn) -> tuple[DeviceKind, str]:
    kind = draw(st.sampled_from([LINUX, FRR]))
    return kind, draw(risky_line(kind))


def _short_letters(word: str) -> set[str]:
    return set(word[1:]) if word.startswith("-") and not word.startswith("--") else set()


@settings(max_examples=600, deadline=None)
@given(risky_lines())
@example((LINUX, "echo a#; ip link set eth1 down"))
@example((LINUX, "sysctl --sys"))
@example((LINUX, "sysctl -qp"))
@example((LINUX, "ss --diag=/tmp/x"))
@example((LINUX, "cat /dev/urandom"))
@example((FRR, "find /etc/frr -name x -delete"))
@example((LINUX, "\n ip -o addr"))  # found by this property: the judge stripped the newline
@example((FRR, "show ip route\nwrite"))
def test_every_line_judged_read_only_is_safe_alphabet_and_a_listed_form(
    case: tuple[DeviceKind, str],
) -> None:
    kind, line = case
    verdict = judge(line, kind)
    if verdict.changes:
        assert verdict.reason
        return
    allowed = set(EXTRA[kind]) | {" "}
    assert all(c in allowed or (c.isascii() and c.isalnum()) for c in line), line
    words = line.split()
    if kind is FRR:
        expanded = verdict.expanded.removeprefix("do ").split()
        assert expanded[0] in ("show", "ping", "traceroute", "list", "who", "terminal"), line
        if expanded[0] in ("ping", "traceroute"):
            assert not any(w.startswith("-") for w in expanded[1:]), line
        for piece in line.split("|")[1:]:
            assert "include".startswith(piece.split()[0].lower()), line
        return
    assert words[0] in FORMS, line
    for danger in DANGEROUS.get(words[0], ()):
        for word in words[1:]:
            if danger.startswith("--"):
                assert not (word.startswith("--") and danger.startswith(word.split("=")[0])), line
            elif danger.startswith("-"):
                assert danger[1] not in _short_letters(word), line
            else:
                assert danger not in word, line
    if words[0] in ("cat", "head", "tail", "grep", "wc", "md5sum", "sha1sum", "sha256sum"):
        device = ("/dev/", "/proc/kcore", "/proc/kmsg", "/proc/self", "/sys/")
        assert not any(w.startswith(device) and "/class/net/" not in w for w in words), line


def test_the_default_forbidden_list_still_holds_ping_flood() -> None:
    assert "ping -f" in DEFAULT_FORBIDDEN_COMMANDS
