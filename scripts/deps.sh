#!/usr/bin/env bash
# deps.sh - install the Debian packages reign needs to build, test and run its demo.
#
# Idempotent and quiet when everything is there: it asks dpkg which packages are missing and
# only then runs apt-get (update + install --no-install-recommends), as root or through sudo.
# Debian 12 (bookworm) is the reference; the package names are bookworm's.
set -euo pipefail

PACKAGES=(
    build-essential cmake pkg-config git
    clang clang-format libclang-rt-14-dev # fuzzers, sanitizers with clang, format check
    libzookeeper-mt-dev libuv1-dev libcjson-dev libcmocka-dev
    libhttp-parser-dev # etcd: its JSON gateway over reign's own HTTP/1.1 (answers' parser)
    libcurl4-openssl-dev # etcd over TLS (etcds://): libcurl's multi interface
    protobuf-c-compiler libprotobuf-c-dev libnghttp2-dev # etcd's gRPC API: messages, HTTP/2
    zookeeper default-jre-headless # test servers run from the zookeeper package's jars
    python3 python3-kazoo libcurator-recipes-java # test tools; foreign clients for interop
    procps iproute2 # ps/pgrep/kill and ss, used by the scripts and tests
    libsqlite3-dev libmariadb-dev libpq-dev # SQL backends: SQLite, MariaDB Connector/C, libpq
    libinih-dev libmicrohttpd-dev # reignd: config file, metrics and peer endpoints
    nettle-dev # reignd: HMAC-SHA256 signatures between peers
    mariadb-server mariadb-client postgresql postgresql-client sqlite3 # SQL test servers, clients
    etcd-server etcd-client curl # etcd test servers (scripts/etcd.sh), etcdctl, its JSON gateway
    openssl # throwaway CAs and certificates of the TLS test servers (make_tls: SQL, etcds://)
    python3-etcd3 # bench/etcd_failover.py: python-etcd3's lock, a reference beside etcdctl elect
    dpkg-dev debhelper lintian # the Debian packages (scripts/package.sh) and their check
    bash-completion # the completion test sources its functions, as an interactive shell has them
    faketime # the clock-step tests: a database server's (or the host's) wall clock stepped
    prometheus # promtool: the alert rules' tests (contrib/prometheus); its server is not run
    chromium # reignd's status page drawn headless (its DOM and screenshots) by its end-to-end test
)

# One dpkg-query for all: it lists the known ones with their state (unknown ones not at all).
installed=" $(dpkg-query -W -f='${Package}=${db:Status-Status} ' "${PACKAGES[@]}" 2>/dev/null ||
    true) "
missing=()
for pkg in "${PACKAGES[@]}"; do
    if [[ $installed != *" $pkg=installed "* ]]; then missing+=("$pkg"); fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "deps.sh: installing ${missing[*]}" >&2
as_root=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || {
        echo "deps.sh: not root and no sudo: install these as root: ${missing[*]}" >&2
        exit 1
    }
    as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends "${missing[@]}"

# prometheus is here for its promtool only.  Its package enables and starts a Prometheus server
# (port 9090, scraping itself) where an init system runs services (in a container whose
# policy-rc.d refuses starts, it is not started); one installed by this script is stopped and
# disabled again, so that it neither runs beside the tests nor starts at the next boot.
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
    if [[ -d /run/systemd/system ]]; then
        "${as_root[@]}" systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    else
        "${as_root[@]}" invoke-rc.d prometheus stop >/dev/null 2>&1 || true
        "${as_root[@]}" update-rc.d prometheus disable >/dev/null 2>&1 || true
    fi
fi
