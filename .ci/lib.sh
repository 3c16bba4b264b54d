# shellcheck shell=bash
# The steps of .ci/run, as functions (sourced by .ci/run; tests/ci calls them one by one).
#
# Everything here is bounded: waiting for apt's lock, for a service to answer. Every failure
# says what failed and shows the failing tool's own output.

CI_APT_LOCK_WAIT=${CI_APT_LOCK_WAIT:-600}   # seconds to wait for another apt/dpkg to finish
CI_APT_LOCKS=${CI_APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}
CI_SERVICE_WAIT=${CI_SERVICE_WAIT:-60}      # seconds a started service gets to answer
CI_CACHE=${CI_CACHE:-.cache}
CI_CONSTRAINTS=${CI_CONSTRAINTS:-constraints.txt}

ci_log() { printf '.ci/run: %s\n' "$*" >&2; }

# ----------------------------------------------------------------------------- Python
# The first Python 3.11 or newer: $CI_PYTHON, python3, then versioned names.
ci_python() {
    local candidate
    for candidate in ${CI_PYTHON:-} python3 python3.14 python3.13 python3.12 python3.11; do
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then
            command -v "$candidate"
            return 0
        fi
    done
    ci_log "no Python 3.11 or newer found (python3: $(python3 --version 2>&1 || echo missing))"
    return 1
}

# ----------------------------------------------------------------------------- apt
# "PID (command)" of each process holding one of apt's locks (POSIX/OFD locks, read from
# /proc/locks by device and inode); nothing when all are free.
ci_apt_lock_holders() {
    local path dev ino key pid
    local -a lock
    for path in $CI_APT_LOCKS; do
        [ -e "$path" ] || continue
        read -r dev ino < <(stat -c '%d %i' "$path") || continue
        key=$(printf '%02x:%02x:%d' $(((dev >> 8) & 0xfff)) $(((dev & 0xff) | ((dev >> 12) & 0xfff00))) "$ino")
        while read -r -a lock; do
            # "1: POSIX  ADVISORY  WRITE 1234 fe:00:5678 0 EOF" (OFD locks show pid -1);
            # processes waiting for a lock have "->" after the number.
            [ "${lock[1]:-}" = "->" ] && continue
            [ "${lock[5]:-}" = "$key" ] || continue
            pid=${lock[4]}
            printf '%s (%s) holds %s\n' "$pid" "$(cat "/proc/$pid/comm" 2>/dev/null || echo '?')" "$path"
        done </proc/locks
    done
    return 0
}

# Wait (at most CI_APT_LOCK_WAIT seconds) until no other process holds apt's locks.
ci_wait_for_apt_lock() {
    local deadline=$((SECONDS + CI_APT_LOCK_WAIT)) holders announced=""
    while holders=$(ci_apt_lock_holders) && [ -n "$holders" ]; do
        if ((SECONDS >= deadline)); then
            ci_log "apt is still locked after ${CI_APT_LOCK_WAIT}s; giving up:"
            printf '  %s\n' "$holders" >&2
            return 1
        fi
        if [ -z "$announced" ]; then
            ci_log "waiting (up to ${CI_APT_LOCK_WAIT}s) for another apt/dpkg to finish:"
            printf '  %s\n' "$holders" >&2
            announced=1
        fi
        sleep 1
    done
}

# apt-get with its output kept; on failure the output is shown and the call fails.
ci_apt_get() {
    local output status=0
    ci_wait_for_apt_lock || return 1
    # The lock check above and apt-get's start race with other processes: apt then waits too.
    output=$(DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 "$@" 2>&1) \
        || status=$?
    if [ "$status" -ne 0 ]; then
        ci_log "apt-get $* failed (exit $status):"
        printf '%s\n' "$output" >&2
        return "$status"
    fi
}

# Install Debian packages (root only; `apt-get update` once per run).
ci_apt_install() {
    if [ "$(id -u)" -ne 0 ]; then
        ci_log "not root: install these Debian packages first: $*"
        return 1
    fi
    if [ -z "${CI_APT_UPDATED:-}" ]; then
        ci_log "apt-get update"
        ci_apt_get update || return 1
        CI_APT_UPDATED=1
    fi
    ci_log "apt-get install $*"
    ci_apt_get install -y --no-install-recommends "$@"
}

# dynamips from Debian's non-free component (a sources entry of its own, then one update).
ci_dynamips() {
    local sources=/etc/apt/sources.list.d/debian-non-free.sources codename
    if [ ! -e "$sources" ]; then
        [ "$(id -u)" -eq 0 ] || { ci_log "not root: install dynamips first"; return 1; }
        codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
        printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$codename" >"$sources"
        CI_APT_UPDATED=
    fi
    ci_apt_install dynamips
}

# ----------------------------------------------------------------------------- services
# ci_ensure_service NAME CHECK START: if CHECK fails, run START, then wait (bounded) until
# CHECK succeeds. CHECK and START are function names.
ci_ensure_service() {
    local name=$1 check=$2 start=$3 output deadline
    if "$check"; then
        ci_log "$name answers"
        return 0
    fi
    ci_log "$name does not answer; starting it"
    if ! output=$("$start" 2>&1); then
        # It may be starting already (another run): keep waiting, but show what it said.
        ci_log "starting $name said: $output"
    fi
    deadline=$((SECONDS + CI_SERVICE_WAIT))
    until "$check"; do
        if ((SECONDS >= deadline)); then
            ci_log "$name did not answer within ${CI_SERVICE_WAIT}s after starting it"
            return 1
        fi
        sleep 0.5
    done
    ci_log "$name answers"
}

ci_postgres_ready() { pg_isready -q -h 127.0.0.1 -p 5432 -t 2 >/dev/null 2>&1; }
ci_postgres_start() {
    local version
    version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
    [ -n "$version" ] || { echo "no cluster under /etc/postgresql"; return 1; }
    pg_ctlcluster --skip-systemctl-redirect "$version" main start
}
ci_redis_ready() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }
ci_redis_start() {
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log
}

# PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer, started (or installed) if not.
ci_ensure_services() {
    if ! command -v pg_isready >/dev/null 2>&1 || ! command -v pg_ctlcluster >/dev/null 2>&1; then
        ci_apt_install postgresql || return 1
    fi
    if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
        ci_apt_install redis-server || return 1
    fi
    ci_ensure_service PostgreSQL ci_postgres_ready ci_postgres_start || return 1
    ci_ensure_service Redis ci_redis_ready ci_redis_start
}

# ----------------------------------------------------------------------------- tox
# Print the path of a tox installed into its own venv under $CI_CACHE (created on first use,
# reused while the constraints file is unchanged). Never pip-installs into the system Python:
# Debian 12 refuses that (externally-managed-environment).
ci_tox() {
    local venv="$CI_CACHE/tox-venv" stamp python output wanted
    stamp="$venv/.constraints.sha256"
    wanted=$(sha256sum "$CI_CONSTRAINTS" | cut -d' ' -f1)
    if [ -x "$venv/bin/tox" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ] \
        && "$venv/bin/python" -c 'import tox' >/dev/null 2>&1; then
        printf '%s\n' "$venv/bin/tox"
        return 0
    fi
    python=$(ci_python) || return 1
    rm -rf "$venv"
    mkdir -p "$CI_CACHE"
    if ! output=$("$python" -m venv "$venv" 2>&1); then
        # Debian's python3 has no ensurepip until python3-venv is installed.
        rm -rf "$venv"
        ci_log "$python -m venv failed: $output"
        ci_apt_install python3-venv || return 1
        if ! output=$("$python" -m venv "$venv" 2>&1); then
            ci_log "$python -m venv failed again: $output"
            return 1
        fi
    fi
    ci_log "installing tox into $venv (pinned by $CI_CONSTRAINTS)"
    if ! output=$("$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --constraint "$CI_CONSTRAINTS" tox 2>&1); then
        ci_log "installing tox failed:"
        printf '%s\n' "$output" >&2
        return 1
    fi
    printf '%s\n' "$wanted" >"$stamp"
    printf '%s\n' "$venv/bin/tox"
}

# ----------------------------------------------------------------------------- router lab
# What the router lab (tests/lab: FRR in GNS3 Docker nodes) needs from Debian: Docker,
# debootstrap (the image is built from Debian packages), a static busybox (gns3-server
# refuses Docker nodes without one), `file` (to tell the static busybox). Installs what is
# missing; fails (and says what) when it cannot.
ci_router_lab_packages() {
    local -a wanted=()
    command -v dockerd >/dev/null 2>&1 || wanted+=(docker.io)
    command -v debootstrap >/dev/null 2>&1 || wanted+=(debootstrap)
    command -v file >/dev/null 2>&1 || wanted+=(file)
    if ! file -L /bin/busybox 2>/dev/null | grep -q -E 'statically linked|static-pie'; then
        wanted+=(busybox-static)
    fi
    command -v nsenter >/dev/null 2>&1 || wanted+=(util-linux)
    command -v ip >/dev/null 2>&1 || wanted+=(iproute2)
    [ "${#wanted[@]}" -eq 0 ] && return 0
    ci_apt_install "${wanted[@]}"
}
