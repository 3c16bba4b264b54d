#!/usr/bin/env bash
# Build the lab's FRRouting image from Debian packages only (no container registry):
#   build-frr-image.sh TAG [MIRROR]
# debootstrap (minbase) a bookworm root with FRR, iproute2, ping, procps, iptables and
# nftables (the hosts' filtering faults of the catalog), add a start command, then
# `docker import` it as TAG. MIRROR defaults to the Debian mirror of this machine's apt
# sources. The same image serves routers (FRR, console = vtysh) and hosts
# (LAB_ROLE=host in the node's environment: no FRR, console = a root shell).
set -euo pipefail
tag=${1:?usage: build-frr-image.sh TAG [MIRROR]}
mirror=${2:-}
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null \
        | grep -v -E '^[[:space:]]*#' | grep -o -E 'https?://[^ ]+/debian/?( |$)' \
        | grep -v -E 'security' | head -n 1 | tr -d ' ' || true)
fi
[ -n "$mirror" ] || { echo "no Debian mirror found in the apt sources; pass one" >&2; exit 2; }
work=$(mktemp -d /var/tmp/frr-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
echo "debootstrap bookworm from $mirror into $root" >&2
debootstrap --variant=minbase \
    --include=frr,frr-pythontools,iproute2,iputils-ping,procps,busybox,iptables,nftables \
    bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }

# The routing daemons the lab uses (Debian ships them off).
sed -i -E 's/^(bgpd|ospfd|ospf6d|staticd)=no/\1=yes/' "$root/etc/frr/daemons"
# FRR logs to a file, not to the console.
cat >"$root/etc/frr/frr.conf" <<'CONF'
frr defaults traditional
log file /var/log/frr/frr.log informational
service integrated-vtysh-config
!
CONF
chown 100:101 "$root/etc/frr/frr.conf" 2>/dev/null || true
# A console without bracketed paste: no escape codes around every pasted command.
printf 'set enable-bracketed-paste off\n' >>"$root/etc/inputrc"
rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/*

cat >"$root/usr/local/sbin/lab-start" <<'START'
#!/bin/sh
# The node's main process (its console). Routers: start FRR and give the console to vtysh,
# back to vtysh after someone exits to the shell. Hosts (LAB_ROLE=host): a root shell.
busybox syslogd -O /var/log/messages 2>/dev/null
cd /
if [ "${LAB_ROLE:-router}" = host ]; then
    while true; do bash -i; done
fi
sysctl -qw net.ipv4.ip_forward=1 2>/dev/null
mkdir -p /var/log/frr && chown frr:frr /var/log/frr
/usr/lib/frr/frrinit.sh start >/var/log/frr-start.log 2>&1
while true; do
    vtysh
    bash -i
done
START
chmod 755 "$root/usr/local/sbin/lab-start"

tar --numeric-owner -C "$root" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["/usr/local/sbin/lab-start"]' - "$tag" >/dev/null
echo "built $tag" >&2
