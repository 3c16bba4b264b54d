"""``.ci/run`` on a stock Debian 12: Python ≥ 3.11 of any minor version, tox in its own
venv (never ``pip install`` into the system Python), apt's lock waited for (bounded) and
apt's errors shown, PostgreSQL and Redis checked and started when they do not answer."""

from __future__ import annotations

import configparser
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.ci.conftest import REPO, CiShell

OLD_PYTHON = "exit 1"  # answers the version probe like a Python 3.10 would: no
GOOD_PYTHON = "exit 0"


@contextmanager
def lock_held(path: Path, seconds: float) -> Iterator[subprocess.Popen[str]]:
    """Another process holding a POSIX lock on ``path`` (as apt-get does) for ``seconds``,
    or until :func:`release` lets it go."""
    path.touch()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, select, sys\n"
            "f = open(sys.argv[1], 'w'); fcntl.lockf(f, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "select.select([sys.stdin], [], [], float(sys.argv[2]))",
            str(path),
            str(seconds),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=10)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()


def release(holder: subprocess.Popen[str]) -> None:
    """The holder lets its lock go (it ends)."""
    assert holder.stdin is not None
    holder.stdin.write("\n")
    holder.stdin.flush()
    holder.wait(timeout=10)


def wait_for_text(path: Path, text: str, process: subprocess.Popen[str]) -> str:
    """What ``process`` wrote to ``path`` once it says ``text`` (or it ended)."""
    deadline = time.monotonic() + 30
    while text not in (written := path.read_text()) and process.poll() is None:
        assert time.monotonic() < deadline, written
        time.sleep(0.02)
    return written


# ----------------------------------------------------------------------------- Python
def test_any_python_from_3_11_on_is_taken_not_only_python3_11(ci: CiShell) -> None:
    ci.stub("python3", OLD_PYTHON)
    ci.stub("python3.14", OLD_PYTHON)
    ci.stub("python3.13", GOOD_PYTHON)
    result = ci.run("ci_python")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(ci.bin / "python3.13")


def test_no_python_3_11_or_newer_is_a_clear_failure(ci: CiShell) -> None:
    for name in ("python3", "python3.14", "python3.13", "python3.12", "python3.11"):
        ci.stub(name, OLD_PYTHON)
    result = ci.run("ci_python")
    assert result.returncode == 1
    assert "no Python 3.11 or newer found" in result.stderr


# ----------------------------------------------------------------------------- apt
def test_the_apt_lock_is_waited_for_while_another_process_holds_it(ci: CiShell) -> None:
    lock = ci.root / "lock-frontend"
    stderr = ci.root / "stderr.log"
    ci.env.update(CI_APT_LOCKS=str(lock), CI_APT_LOCK_WAIT="60")
    with lock_held(lock, 120) as holder:
        waiter = ci.start("ci_wait_for_apt_lock", stderr)
        said = wait_for_text(stderr, "waiting", waiter)
        assert waiter.poll() is None, said  # it waits while the lock is held ...
        assert f"{holder.pid} (python" in said
        release(holder)
        assert waiter.wait(timeout=30) == 0, stderr.read_text()  # ... and goes on once free


def test_the_apt_lock_wait_is_bounded_and_names_the_holder(ci: CiShell) -> None:
    lock = ci.root / "lock"
    ci.env.update(CI_APT_LOCKS=str(lock), CI_APT_LOCK_WAIT="1")
    with lock_held(lock, 60) as holder:
        result = ci.run("ci_wait_for_apt_lock", timeout=30)
    assert result.returncode == 1
    assert "still locked after 1s; giving up" in result.stderr
    assert f"{holder.pid} (python" in result.stderr and str(lock) in result.stderr


def test_apt_failures_show_apt_s_own_errors(ci: CiShell) -> None:
    ci.stub(
        "apt-get",
        'if [ "$*" != "${*#*install}" ]; then '
        'echo "E: Unable to locate package no-such-package" >&2; exit 100; fi',
    )
    result = ci.run("ci_apt_install no-such-package")
    assert result.returncode == 100
    assert "E: Unable to locate package no-such-package" in result.stderr
    assert "apt-get install -y --no-install-recommends no-such-package failed" in result.stderr
    assert ci.calls[0].startswith("apt-get -o DPkg::Lock::Timeout=")
    assert ci.calls[0].endswith(" update")  # the lists are refreshed first, once


# ----------------------------------------------------------------------------- tox
VENV_MAKING_PYTHON = """
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin"
    cat >"$3/bin/python" <<STUB
#!/bin/bash
echo "venv-python \\$*" >>"$PWD/calls.log"
if [ "\\$1" = "-m" ] && [ "\\$2" = "pip" ]; then
    printf '#!/bin/bash\\n' >"$3/bin/tox"; chmod +x "$3/bin/tox"
fi
STUB
    chmod +x "$3/bin/python"
fi
exit 0
"""


def test_tox_is_installed_into_a_cached_venv_and_reused(ci: CiShell) -> None:
    ci.stub("python3", VENV_MAKING_PYTHON)
    first = ci.run("ci_tox")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == ".cache/tox-venv/bin/tox"
    installs = [call for call in ci.calls if " pip install" in call]
    # pip runs from the venv only, pinned by the constraints file; never the system Python.
    assert installs == [
        "venv-python -m pip install --quiet --disable-pip-version-check "
        "--constraint constraints.txt tox"
    ]
    assert not any(call.startswith("python3 -m pip") for call in ci.calls)

    second = ci.run("ci_tox")
    assert second.returncode == 0 and second.stdout.strip() == ".cache/tox-venv/bin/tox"
    assert len([call for call in ci.calls if " pip install" in call]) == 1  # reused

    (ci.root / "constraints.txt").write_text("tox==4.1\n")  # refreshed: reinstalled
    assert ci.run("ci_tox").returncode == 0
    assert len([call for call in ci.calls if " pip install" in call]) == 2


def test_a_python_without_venv_support_gets_debian_s_python3_venv(ci: CiShell) -> None:
    flag = ci.root / "venv-installed"
    ci.stub(
        "python3",
        f'if [ "$2" = "venv" ] && [ ! -e {flag} ]; then '
        'echo "ensurepip is not available" >&2; exit 1; fi\n' + VENV_MAKING_PYTHON,
    )
    ci.stub("apt-get", f'if [ "$*" != "${{*#*python3-venv}}" ]; then touch {flag}; fi')
    result = ci.run("ci_tox")
    assert result.returncode == 0, result.stderr
    assert "ensurepip is not available" in result.stderr
    assert any(c.endswith("install -y --no-install-recommends python3-venv") for c in ci.calls)
    assert result.stdout.strip() == ".cache/tox-venv/bin/tox"


def test_tox_ini_pins_no_python_minor_version_and_uses_the_constraints() -> None:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    for section in tox.sections():
        assert "base_python" not in tox[section] and "basepython" not in tox[section], section
    assert "--constraint {toxinidir}/constraints.txt" in tox["testenv"]["install_command"]
    assert (REPO / "constraints.txt").exists()


# ----------------------------------------------------------------------------- services
def test_services_that_answer_are_left_alone(ci: CiShell) -> None:
    ci.stub("pg_isready", "exit 0")
    ci.stub("redis-cli", "echo PONG")
    ci.stub("pg_ctlcluster", "exit 0")
    ci.stub("redis-server", "exit 0")
    result = ci.run("ci_ensure_services")
    assert result.returncode == 0, result.stderr
    assert not [c for c in ci.calls if c.startswith(("pg_ctlcluster", "redis-server"))]
    assert "PostgreSQL answers" in result.stderr and "Redis answers" in result.stderr


def test_services_that_do_not_answer_are_started_and_waited_for(ci: CiShell) -> None:
    pg_up, redis_up = ci.root / "pg-up", ci.root / "redis-up"
    ci.stub("pg_isready", f"[ -e {pg_up} ]")
    ci.stub("redis-cli", f"[ -e {redis_up} ] && echo PONG || echo 'Could not connect'")
    ci.stub("pg_ctlcluster", f"(sleep 1; touch {pg_up}) &")
    ci.stub("redis-server", f"(sleep 1; touch {redis_up}) &")
    ci.stub("mkdir", "exit 0")  # /var/lib/redis and /var/log/redis are not ours to create
    result = ci.run("ci_ensure_services")
    assert result.returncode == 0, result.stderr
    starts = [c for c in ci.calls if c.startswith(("pg_ctlcluster", "redis-server"))]
    assert starts[0].startswith("pg_ctlcluster --skip-systemctl-redirect ")
    assert starts[0].endswith(" main start")
    assert starts[1] == (
        "redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save  --appendonly no"
        " --dir /var/lib/redis --logfile /var/log/redis/ci.log"
    )
    assert "PostgreSQL does not answer; starting it" in result.stderr


def test_a_service_that_never_answers_fails_within_the_bound(ci: CiShell) -> None:
    ci.env["CI_SERVICE_WAIT"] = "1"
    ci.stub("pg_isready", "exit 2")
    ci.stub("pg_ctlcluster", 'echo "Error: cluster is broken" >&2; exit 1')
    ci.stub("redis-cli", "echo PONG")
    ci.stub("redis-server", "exit 0")
    result = ci.run("ci_ensure_services", timeout=30)
    assert result.returncode == 1
    assert "Error: cluster is broken" in result.stderr
    assert "PostgreSQL did not answer within 1s" in result.stderr
    # Tried every half second for that second (bash counts whole seconds: two at most),
    # not for the default 60 s: a slower machine tries fewer times, never more.
    tries = [call for call in ci.calls if call.startswith("pg_isready")]
    assert 1 <= len(tries) <= 2 * (2 + 1) + 1, tries


def test_this_machine_s_postgresql_and_redis_answer(ci: CiShell) -> None:
    """The real check against the real services (they run on every machine of this project)."""
    result = ci.run("ci_postgres_ready && ci_redis_ready")
    assert result.returncode == 0, result.stderr
