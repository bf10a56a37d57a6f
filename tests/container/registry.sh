# SPDX-License-Identifier: Apache-2.0
# A private registry for container tests, sourced by them: Debian's docker-registry on
# 127.0.0.1:<free port> with htpasswd authentication, its storage and its request log in a
# folder of the test's, started with setsid and stopped by its pid; and the test images,
# built with umoci from busybox-static and pushed with skopeo (credentials from an auth file,
# never on a command line).
#
#   registry_missing [TOOL...]  prints what of the fixture's needs (and these tools) is missing
#   registry_start FOLDER   starts it; sets REGISTRY (127.0.0.1:PORT), REGISTRY_USER,
#                           REGISTRY_PASSWORD, REGISTRY_AUTH (an auth.json for it), REGISTRY_LOG
#   registry_stop           stops it and the listener (also done by registry_trap's EXIT trap)
#   registry_auth_at PATH [USER]  a copy of REGISTRY_AUTH at PATH (0600), USER's if named
#   registry_build_images   builds FOLDER/images (an OCI layout) with two images:
#     x  ENV FROM_IMAGE=yes, WORKDIR /work, an ENTRYPOINT that prints entrypoint-ran; layers:
#        busybox, /etc/delete-me, /olddir/{d,old}, /locked (mode 000, "locked content"),
#        /suid (mode 4755) and /sgid (mode 2755);
#        then /etc/delete-me deleted (a whiteout); then olddir/ replaced (an opaque whiteout)
#        holding only d ("d"), and /x-marker
#     y  busybox and /y-marker
#   registry_push NAME TAG  pushes image NAME of the layout as NAME:TAG (x, y)
#   registry_push_as NAME REPO:TAG
#   registry_push_text REPO:TAG WORD  pushes an image of busybox and /what holding WORD, with
#                           ENV FROM_IMAGE=yes (no registry_build_images needed); prints its
#                           manifest digest, learnt from the push (no request made for it)
#   registry_image_from NAME ROOTFS  an image NAME in the layout holding a copy of ROOTFS
#   registry_digest REPO:TAG  the manifest digest the registry has for it (asks the registry)
#   registry_requests PATTERN  how many requests in the log match the grep -E PATTERN
#   registry_listener FILE  a registry nobody may use: a listener on 127.0.0.1 that writes a
#                           line to FILE for each connection it accepts (FILE is there, empty,
#                           once it listens); sets LISTENER (127.0.0.1:PORT)
# Needs: docker-registry, skopeo, umoci, busybox-static, python3.

registry_missing() {  # [TOOL...]: prints what is missing, nothing when all is there
    local tool
    for tool in docker-registry skopeo umoci python3 "$@"; do
        command -v "$tool" >/dev/null 2>&1 || echo "$tool"
    done
    [ -x /bin/busybox ] && ldd /bin/busybox 2>&1 | grep -q "not a dynamic executable" || echo "busybox-static"
}

registry_start() {
    REGISTRY_DIR=$1
    mkdir -p "$REGISTRY_DIR/storage"
    local here port
    here=$(dirname "${BASH_SOURCE[0]}")
    port=$(python3 "$here/../free_port.py")
    REGISTRY=127.0.0.1:$port REGISTRY_USER=trellis REGISTRY_PASSWORD="pw-$RANDOM$RANDOM-secret"
    REGISTRY_LOG=$REGISTRY_DIR/registry.log REGISTRY_AUTH=$REGISTRY_DIR/auth.json
    # bcrypt (crypt's METHOD_BLOWFISH) at cost 4: the registry checks it on every request, and
    # the machine is slow. The password reaches python through its environment, not argv.
    REGISTRY_USER=$REGISTRY_USER REGISTRY_PASSWORD=$REGISTRY_PASSWORD python3 -W ignore -c '
import crypt, os
print(os.environ["REGISTRY_USER"] + ":" + crypt.crypt(os.environ["REGISTRY_PASSWORD"], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))
' >"$REGISTRY_DIR/htpasswd" || return 1
    REGISTRY_USER=$REGISTRY_USER REGISTRY_PASSWORD=$REGISTRY_PASSWORD python3 -c '
import base64, json, os, sys
token = base64.b64encode((os.environ["REGISTRY_USER"] + ":" + os.environ["REGISTRY_PASSWORD"]).encode()).decode()
json.dump({"auths": {sys.argv[1]: {"auth": token}}}, sys.stdout)
' "$REGISTRY" >"$REGISTRY_AUTH"
    chmod 600 "$REGISTRY_AUTH"
    cat >"$REGISTRY_DIR/config.yml" <<YAML
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/storage
  delete:
    enabled: true
http:
  addr: $REGISTRY
auth:
  htpasswd:
    realm: trellis-test
    path: $REGISTRY_DIR/htpasswd
YAML
    setsid docker-registry serve "$REGISTRY_DIR/config.yml" >"$REGISTRY_LOG" 2>&1 </dev/null &
    REGISTRY_PID=$!
    local _
    for _ in $(seq 1 100); do
        python3 - "$REGISTRY" <<'PY' 2>/dev/null && return 0
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen("http://" + sys.argv[1] + "/v2/", timeout=1)
except urllib.error.HTTPError as e:
    sys.exit(0 if e.code == 401 else 1)
sys.exit(1)
PY
        kill -0 "$REGISTRY_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "registry.sh: docker-registry did not start on $REGISTRY:" >&2
    tail -n 5 "$REGISTRY_LOG" >&2
    return 1
}

registry_stop() {
    [ -z "${LISTENER_PID:-}" ] || kill "$LISTENER_PID" 2>/dev/null || :
    LISTENER_PID=
    [ -n "${REGISTRY_PID:-}" ] || return 0
    # Each may fail (the registry already gone; its status is TERM's): never a reason to stop
    # a sourcing script that runs with set -e, in whose EXIT trap this runs.
    kill "$REGISTRY_PID" 2>/dev/null || :
    timeout 10 tail --pid="$REGISTRY_PID" -f /dev/null 2>/dev/null || :
    wait "$REGISTRY_PID" 2>/dev/null || :
    REGISTRY_PID=
}

# registry_trap: stops the registry when the sourcing script exits (keeps its other EXIT work
# when given as a command: registry_trap 'rm -rf "$work"').
registry_trap() { trap "registry_stop; ${1:-:}" EXIT; }

registry_auth_at() {  # PATH [USER]
    mkdir -p "$(dirname "$1")" && cp "$REGISTRY_AUTH" "$1" && chmod 600 "$1" || return 1
    [ -z "${2:-}" ] || chown "$2" "$1"
}

registry_build_images() {
    local layout=$REGISTRY_DIR/images tree=$REGISTRY_DIR/tree
    umoci init --layout "$layout" || return 1
    # x, layer 1: busybox, a file to delete, a folder to replace, an unreadable file.
    umoci new --image "$layout:x" && umoci unpack --image "$layout:x" "$tree" >/dev/null || return 1
    registry_busybox "$tree/rootfs"
    mkdir -p "$tree/rootfs/olddir" "$tree/rootfs/work"
    echo gone >"$tree/rootfs/etc/delete-me"
    echo d-old >"$tree/rootfs/olddir/d"
    echo old >"$tree/rootfs/olddir/old"
    echo "locked content" >"$tree/rootfs/locked"
    chmod 000 "$tree/rootfs/locked"
    echo s >"$tree/rootfs/suid" && chmod 4755 "$tree/rootfs/suid"
    echo s >"$tree/rootfs/sgid" && chmod 2755 "$tree/rootfs/sgid"
    umoci repack --image "$layout:x" "$tree" >/dev/null || return 1
    rm -rf "$tree"
    # layer 2: /etc/delete-me deleted, which umoci writes as a whiteout (.wh.delete-me); from a
    # fresh unpack, which a second repack of the same bundle is not.
    umoci unpack --image "$layout:x" "$tree" >/dev/null || return 1
    rm "$tree/rootfs/etc/delete-me"
    echo x >"$tree/rootfs/x-marker"
    umoci repack --image "$layout:x" "$tree" >/dev/null || return 1
    rm -rf "$tree"
    # layer 3, made by hand: olddir/ replaced by an opaque whiteout holding only d.
    mkdir -p "$REGISTRY_DIR/opaque/olddir"
    : >"$REGISTRY_DIR/opaque/olddir/.wh..wh..opq"
    echo d >"$REGISTRY_DIR/opaque/olddir/d"
    tar -C "$REGISTRY_DIR/opaque" --owner=0 --group=0 -cf "$REGISTRY_DIR/opaque.tar" olddir &&
        umoci raw add-layer --image "$layout:x" "$REGISTRY_DIR/opaque.tar" || return 1
    umoci config --image "$layout:x" --config.env FROM_IMAGE=yes --config.workingdir /work \
        --config.entrypoint /bin/sh --config.entrypoint -c \
        --config.entrypoint 'echo entrypoint-ran; exec "$@"' --config.entrypoint entrypoint \
        --config.cmd /bin/sh || return 1
    # y: another image altogether.
    umoci new --image "$layout:y" && umoci unpack --image "$layout:y" "$tree" >/dev/null || return 1
    registry_busybox "$tree/rootfs"
    echo y >"$tree/rootfs/y-marker"
    umoci repack --image "$layout:y" "$tree" >/dev/null || return 1
    rm -rf "$tree"
}

registry_busybox() {  # ROOTFS: busybox and the few names the tests call, and the mount points distribution images have
    mkdir -p "$1/bin" "$1/etc" "$1/proc" "$1/sys" "$1/dev" "$1/tmp"
    cp /bin/busybox "$1/bin/busybox"
    local name
    for name in sh cat ls echo env pwd id stat; do ln -s busybox "$1/bin/$name"; done
}

registry_push_as() {  # NAME REPO:TAG; the digest pushed goes to FOLDER/pushed
    skopeo copy --quiet --dest-authfile "$REGISTRY_AUTH" --dest-tls-verify=false \
        --digestfile "$REGISTRY_DIR/pushed" "oci:$REGISTRY_DIR/images:$1" "docker://$REGISTRY/$2"
}
registry_push() { registry_push_as "$1" "$1:$2"; }

# The image is named what-WORD in the layout. Unpacked --rootless: the tests that push these
# may run unprivileged.
registry_push_text() {  # REPO:TAG WORD
    local layout=$REGISTRY_DIR/images name=what-$2 tree=$REGISTRY_DIR/tree
    [ -d "$layout" ] || umoci init --layout "$layout" || return 1
    umoci new --image "$layout:$name" &&
        umoci unpack --rootless --image "$layout:$name" "$tree" >/dev/null || return 1
    registry_busybox "$tree/rootfs"
    echo "$2" >"$tree/rootfs/what"
    umoci repack --image "$layout:$name" "$tree" >/dev/null || return 1
    rm -rf "$tree"
    umoci config --image "$layout:$name" --config.env FROM_IMAGE=yes &&
        registry_push_as "$name" "$1" && cat "$REGISTRY_DIR/pushed"
}

registry_image_from() {  # NAME ROOTFS (as root: the files keep their owners)
    local layout=$REGISTRY_DIR/images tree=$REGISTRY_DIR/tree-$1
    [ -d "$layout" ] || umoci init --layout "$layout" || return 1
    umoci new --image "$layout:$1" && umoci unpack --image "$layout:$1" "$tree" >/dev/null || return 1
    cp -a "$2/." "$tree/rootfs/" && umoci repack --image "$layout:$1" "$tree" >/dev/null || return 1
    rm -rf "$tree"
}

# The manifest digest the registry has for REPO:TAG.
registry_digest() {
    skopeo inspect --authfile "$REGISTRY_AUTH" --tls-verify=false --format '{{.Digest}}' "docker://$REGISTRY/$1"
}

registry_requests() { grep -cE "$1" "$REGISTRY_LOG"; }

# The Slurm tests' trellis.toml for images of REGISTRY/x, in the node cache CACHE, with the
# build tree's agent; more [container] lines may follow.
registry_config() {  # FILE CACHE [LINE...]
    local file=$1 cache=$2
    shift 2
    {
        printf '[binding]\npolicy = "closest"\n[container]\n'
        printf 'allowed_registries = ["%s/x"]\ninsecure_registries = ["%s"]\n' "$REGISTRY" "$REGISTRY"
        printf 'image_cache = "%s"\nagent = "%s"\n' "$cache" "$build/trellis-agent"
        printf '%s\n' "$@"
    } >"$file"
}

registry_listener() {  # FILE
    local port
    port=$(python3 "$(dirname "${BASH_SOURCE[0]}")/../free_port.py") || return 1
    LISTENER=127.0.0.1:$port
    python3 - "$port" "$1" <<'PY' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
open(sys.argv[2], "w").close()
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f:
        f.write("accepted\n")
    c.close()
PY
    LISTENER_PID=$!
    local _
    for _ in $(seq 1 50); do [ -f "$1" ] && return 0; sleep 0.1; done
    echo "registry.sh: the listener on $LISTENER did not start" >&2
    return 1
}
