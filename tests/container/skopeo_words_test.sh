#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The registry client's phrase table against the skopeo of each Debian root here: this
# machine's (Debian 12) and, when it is made, the Debian 13 root's (tests/debian/root), run
# by chroot. Each skopeo meets a real registry (Debian's docker-registry on 127.0.0.1 with
# htpasswd) without credentials and with a tag it lacks, the same registry asked over HTTPS
# (it speaks plain HTTP), a TLS server whose certificate no one signed, and a closed port;
# trellis must tell each failure as what it is (agent/image/skopeo.hpp). Debian unstable's
# root has no skopeo (its suites need none).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${TRELLIS_BUILD:?}
words=$build/tests/container/skopeo_words
. "$here/registry.sh"
missing=$(registry_missing openssl | tr '\n' ' ')
[ -z "$missing" ] || { echo "SKIP: missing $missing(scripts/install-deps)"; exit 77; }
work=$(mktemp -d /tmp/trellis-skopeo-words.XXXXXX)
chmod 755 "$work"
tls_pid=
registry_trap '[ -z "$tls_pid" ] || kill $tls_pid 2>/dev/null; rm -rf "$work"'
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

registry_start "$work/registry" || exit 1
registry_push_text "x:tag" one >/dev/null || { echo "FAIL: cannot push the test image"; exit 1; }
closed=127.0.0.1:$(python3 "$here/../free_port.py")
# A TLS server with a certificate of its own making.
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 1 -keyout "$work/key.pem" \
    -out "$work/cert.pem" 2>/dev/null || { echo "FAIL: openssl could not make a certificate"; exit 1; }
tls_port=$(python3 "$here/../free_port.py")
python3 - "$tls_port" "$work/cert.pem" "$work/key.pem" <<'PY' >/dev/null 2>&1 &
import http.server, ssl, sys
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.BaseHTTPRequestHandler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
PY
tls_pid=$!
for _ in $(seq 1 100); do
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$tls_port" 2>/dev/null && break
    sleep 0.1
done

# Each case: what the lookup asks, and what it must be told as.
cases=(
    "unauthorized|--tls-verify=false docker://$REGISTRY/x:tag"
    "not_found|--tls-verify=false --authfile=AUTH docker://$REGISTRY/x:nope"
    "plain_http|--tls-verify=true --authfile=AUTH docker://$REGISTRY/x:tag"
    "certificate|--tls-verify=true docker://127.0.0.1:$tls_port/x:tag"
    "unreachable|--tls-verify=false docker://$closed/x:tag"
)

# SKOPEO... (a command line) and AUTH as that skopeo sees the credentials' path.
try_skopeo() {  # NAME AUTH SKOPEO...
    local name=$1 auth=$2
    shift 2
    "$@" --version >/dev/null 2>&1 || { fail "$name: cannot run $*"; return; }
    echo "== $name: $("$@" --version)"
    local case expected args status said got
    for case in "${cases[@]}"; do
        expected=${case%%|*}
        args=${case#*|}
        args=${args//AUTH/$auth}
        status=0
        said=$(env -i PATH=/usr/bin:/bin HOME=/nonexistent "$@" --command-timeout 30s inspect --raw $args 2>&1 >/dev/null) ||
            status=$?
        got=$(printf '%s' "$said" | "$words" "$status")
        [ "$got" = "$expected" ] && pass "$name: $expected (status $status: ${said: -120})" ||
            fail "$name: expected $expected, told $got (status $status: $said)"
    done
}

try_skopeo "Debian 12 skopeo" "$REGISTRY_AUTH" skopeo
root=/var/cache/trellis/trixie-slurm
if [ -x "$root/usr/bin/skopeo" ] && [ "$(id -u)" -eq 0 ]; then
    mkdir -p "$root/tmp/trellis-skopeo-words"
    cp "$REGISTRY_AUTH" "$root/tmp/trellis-skopeo-words/auth.json"
    try_skopeo "Debian 13 skopeo" /tmp/trellis-skopeo-words/auth.json "$(command -v chroot)" "$root" /usr/bin/skopeo
    rm -rf "$root/tmp/trellis-skopeo-words"
else
    echo "note: no Debian 13 root with skopeo in $root (made by the Slurm 24.11 suite), or not root: only this machine's skopeo was asked"
fi
[ $failures -eq 0 ] && echo "PASS: skopeo's failures told as what they are" || exit 1
