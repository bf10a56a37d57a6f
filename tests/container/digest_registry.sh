# Sourced by the tests of registry images: Debian's docker-registry on 127.0.0.1 with one
# htpasswd user, started with setsid and stopped by its pid, and a way to push small images
# made with umoci from busybox-static.
#   start_registry DIR AUTHFILE  starts it with its files in DIR (storage, htpasswd, config,
#                                registry.log, the access log the tests count requests in);
#                                writes AUTHFILE (0600) for its user; sets registry_pid,
#                                registry_host (127.0.0.1:PORT) and registry_password
#   push_image DIR AUTHFILE TAG TEXT
#                                pushes x:TAG (busybox and /what holding TEXT); prints its
#                                manifest digest
#   stop_registry                stops it
registry_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

start_registry() {
    local dir=$1 authfile=$2 port hash
    port=$(python3 "$registry_here/../free_port.py")
    registry_host=127.0.0.1:$port
    registry_password="s3cret-$RANDOM$RANDOM"
    hash=$(python3 -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
        "$registry_password")
    echo "alice:$hash" >"$dir/htpasswd"
    mkdir -p "$dir/storage"
    cat >"$dir/registry.yml" <<YAML
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $dir/storage
http:
  addr: $registry_host
auth:
  htpasswd:
    realm: trellis-test
    path: $dir/htpasswd
YAML
    setsid docker-registry serve "$dir/registry.yml" >"$dir/registry.log" 2>&1 &
    registry_pid=$!
    for _ in $(seq 1 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
        sleep 0.1
    done
    if ! kill -0 $registry_pid 2>/dev/null; then
        tail -n 5 "$dir/registry.log"
        echo "FAIL: the registry did not start"
        return 1
    fi
    mkdir -p "$(dirname "$authfile")"
    printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$registry_host" \
        "$(printf 'alice:%s' "$registry_password" | base64 -w0)" >"$authfile"
    chmod 600 "$authfile"
}

push_image() {
    local dir=$1 authfile=$2 tag=$3 text=$4
    local layout=$dir/layout-$tag-$text bundle=$dir/bundle-$tag-$text
    umoci init --layout "$layout" && umoci new --image "$layout:x" &&
        umoci unpack --rootless --image "$layout:x" "$bundle" >/dev/null || return 1
    mkdir -p "$bundle/rootfs/bin" && cp "$(command -v busybox)" "$bundle/rootfs/bin/busybox" &&
        echo "$text" >"$bundle/rootfs/what" || return 1
    umoci repack --image "$layout:x" "$bundle" && umoci config --image "$layout:x" --config.env FROM_IMAGE=yes || return 1
    skopeo copy -q --dest-authfile "$authfile" --dest-tls-verify=false --digestfile "$dir/pushed" \
        "oci:$layout:x" "docker://$registry_host/x:$tag" >/dev/null || return 1
    cat "$dir/pushed"
}

stop_registry() {
    [ -n "${registry_pid:-}" ] && kill "$registry_pid" 2>/dev/null
    registry_pid=
}
