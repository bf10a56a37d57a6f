#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Registry images before anything starts: a tag resolved to its manifest digest by the user's
# own skopeo against a real registry (Debian's docker-registry on 127.0.0.1, htpasswd), with
# the credentials only in the user's auth.json (never on a command line), no blob fetched,
# remembered for digest_lifetime and asked again without it (a moved tag is seen), a pinned
# reference making no request at all; clear errors for missing credentials, an unknown tag,
# plain HTTP not listed in insecure_registries and an unreachable registry; and a registry
# that allowed_registries does not list refused with exit status 3, naming the setting and
# the file, with no connection made to it (a listener that records accepts), by
# `trellis-agent resolve` and by `trellis-agent launch --image`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${TRELLIS_BUILD:?}
agent=$build/trellis-agent
. "$here/registry.sh"
missing=$(registry_missing | tr '\n' ' ')
[ -z "$missing" ] || { echo "SKIP: missing $missing(scripts/install-deps)"; exit 77; }
work=$(mktemp -d /tmp/trellis-digest-test.XXXXXX)
chmod 755 "$work"
registry_trap 'rm -rf "$work"'
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# The user who asks: an unprivileged one when this runs as root (as srun runs as the user).
runner=trellistest
as_user=()
if [ "$(id -u)" -eq 0 ]; then
    id "$runner" >/dev/null 2>&1 || useradd -M -s /bin/sh "$runner" || { echo "SKIP: cannot add user $runner"; exit 77; }
    as_user=(setpriv --reuid="$runner" --regid="$runner" --init-groups)
fi
home=$work/home
mkdir -p "$home/.config/containers" "$home/cache"

# A registry of our own, on 127.0.0.1 only, with one user and the user's auth.json.
registry_start "$work/registry" && registry_auth_at "$home/.config/containers/auth.json" || exit 1
host=$REGISTRY password=$REGISTRY_PASSWORD
push() { registry_push_text "x:$1" "$2"; }  # TAG WORD
chown -R "${runner}:" "$home" 2>/dev/null || true
first=$(push tag one) || { tail -n 5 "$REGISTRY_LOG"; echo "FAIL: cannot push the test image"; exit 1; }

cat >"$work/trellis.toml" <<TOML
[container]
allowed_registries = ["$host"]
insecure_registries = ["$host"]
skopeo = "$work/skopeo"
TOML
# A skopeo that writes down its command line before it runs: what a process listing shows.
cat >"$work/skopeo" <<SH
#!/bin/sh
echo "\$*" >>$work/skopeo-args
exec $(command -v skopeo) "\$@"
SH
chmod 755 "$work/skopeo"
touch "$work/skopeo-args" && chmod 666 "$work/skopeo-args"
sed -e 's/^digest_lifetime.*//' "$work/trellis.toml" >"$work/ask.toml"
{ cat "$work/trellis.toml"; echo "digest_lifetime = 3600"; } >"$work/remember.toml"
cp "$work/trellis.toml" "$work/secure.toml" && sed -i '/^insecure_registries/d' "$work/secure.toml"
chmod 644 "$work"/*.toml

# resolve [ENV=VALUE...] -- AGENT-ARGS: the agent as the user, with their HOME and cache.
resolve() {
    local vars=()
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    env -i PATH=/usr/bin:/bin HOME="$home" XDG_CACHE_HOME="$home/cache" "${vars[@]}" "${as_user[@]}" "$agent" resolve "$@"
}
requests() { registry_requests "\"$1 /v2/x/$2"; }  # METHOD manifests|blobs

# 1. A tag resolved to the digest that was pushed, fetching the manifest and no blob.
blobs=$(requests GET blobs)
out=$(resolve -- --image "docker://$host/x:tag" --config "$work/ask.toml" 2>&1)
[ "$out" = "docker://$host/x@$first" ] && pass "tag resolved: $out" || fail "resolve gave '$out', pushed $first"
[ "$(requests GET blobs)" = "$blobs" ] && pass "no blob fetched to learn the digest" ||
    fail "blobs fetched while resolving: $(grep '/v2/x/blobs' "$REGISTRY_LOG" | tail -2)"

# 2. The credentials: from auth.json, by --authfile; the password on no command line.
grep -Eq -- "--authfile[= ]$home/.config/containers/auth.json" "$work/skopeo-args" && ! grep -q "$password" "$work/skopeo-args" &&
    ! grep -q -- "--creds" "$work/skopeo-args" && pass "credentials by --authfile only: $(head -1 "$work/skopeo-args")" ||
    fail "skopeo's command lines: $(cat "$work/skopeo-args")"
out=$(resolve REGISTRY_AUTH_FILE="$home/.config/containers/auth.json" -- --image "docker://$host/x:tag" --config "$work/ask.toml" 2>&1)
[ "$out" = "docker://$host/x@$first" ] && pass "REGISTRY_AUTH_FILE names the credentials" || fail "REGISTRY_AUTH_FILE: $out"
mv "$home/.config/containers/auth.json" "$home/auth.json.away"
out=$(resolve -- --image "docker://$host/x:tag" --config "$work/ask.toml" 2>&1); status=$?
[ $status -eq 1 ] && echo "$out" | grep -q "refused access (unauthorized): no credentials were found" &&
    pass "missing credentials: $out" || fail "missing credentials: $status $out"
mv "$home/auth.json.away" "$home/.config/containers/auth.json"
out=$(resolve REGISTRY_AUTH_FILE=/nonexistent/auth.json -- --image "docker://$host/x:tag" --config "$work/ask.toml" 2>&1)
echo "$out" | grep -q "REGISTRY_AUTH_FILE names '/nonexistent/auth.json', which cannot be read" &&
    pass "an unreadable REGISTRY_AUTH_FILE is named" || fail "unreadable REGISTRY_AUTH_FILE: $out"
grep -q "$password" "$REGISTRY_LOG" && fail "the password is in the registry's log"

# 3. Clear errors: an unknown tag, plain HTTP to a registry not listed as insecure, nothing
# listening.
out=$(resolve -- --image "docker://$host/x:nope" --config "$work/ask.toml" 2>&1); status=$?
[ $status -eq 1 ] && echo "$out" | grep -q "has no tag 'nope' of 'x'" && pass "unknown tag: $out" || fail "unknown tag: $status $out"
out=$(resolve -- --image "docker://$host/x:tag" --config "$work/secure.toml" 2>&1); status=$?
[ $status -eq 1 ] && echo "$out" | grep -q "speaks plain HTTP, which only registries listed in insecure_registries ($work/secure.toml)" &&
    pass "plain HTTP needs insecure_registries: $out" || fail "plain HTTP: $status $out"
grep -q -- "--tls-verify=true" "$work/skopeo-args" || fail "TLS was not verified for a registry not listed as insecure"
nobody=$(python3 "$here/../free_port.py")
sed "s/$host/127.0.0.1:$nobody/g" "$work/ask.toml" >"$work/nobody.toml"
out=$(resolve -- --image "docker://127.0.0.1:$nobody/x:tag" --config "$work/nobody.toml" 2>&1); status=$?
[ $status -eq 1 ] && echo "$out" | grep -q "cannot reach the registry 127.0.0.1:$nobody" && pass "unreachable: $out" ||
    fail "unreachable registry: $status $out"

# 4. A pinned reference makes no request at all.
manifests=$(requests GET manifests) heads=$(requests HEAD manifests)
out=$(resolve -- --image "docker://$host/x@$first" --config "$work/ask.toml" 2>&1)
[ "$out" = "docker://$host/x@$first" ] && [ "$(requests GET manifests)$(requests HEAD manifests)" = "$manifests$heads" ] &&
    pass "a pinned reference is not looked up" || fail "pinned: '$out', manifest requests before $manifests, now $(requests GET manifests)"

# 5. digest_lifetime: the first lookup is remembered, the next within the lifetime asks no
# one; a moved tag is seen at once without a lifetime.
out=$(resolve -- --image "docker://$host/x:tag" --config "$work/remember.toml" 2>&1)
manifests=$(requests GET manifests)
second=$(push tag two) || fail "cannot push the moved tag"
out=$(resolve -- --image "docker://$host/x:tag" --config "$work/remember.toml" 2>&1)
[ "$out" = "docker://$host/x@$first" ] && [ "$(requests GET manifests)" = "$manifests" ] &&
    pass "within digest_lifetime the remembered digest is used, with no request" ||
    fail "digest_lifetime: '$out', manifest requests $manifests -> $(requests GET manifests)"
record=$home/cache/trellis/digests
[ -f "$record" ] && grep -q "docker://$host/x:tag $first" "$record" && [ "$(stat -c %a "$(dirname "$record")")" = 700 ] &&
    pass "the record is the user's: $(cat "$record")" || fail "the digest record: $(ls -la "$(dirname "$record")" 2>&1)"
out=$(resolve -- --image "docker://$host/x:tag" --config "$work/ask.toml" 2>&1)
[ "$out" = "docker://$host/x@$second" ] && [ "$second" != "$first" ] && pass "a moved tag is seen: $second" ||
    fail "moved tag: '$out', pushed $second"

# 6. A registry that allowed_registries does not list: refused with exit status 3, naming the
# setting and the file, and no connection reaches it.
registry_listener "$work/accepts" || exit 1
elsewhere="docker://$LISTENER/x:tag"
out=$(resolve -- --image "$elsewhere" --config "$work/trellis.toml" 2>&1); status=$?
[ $status -eq 3 ] && echo "$out" | grep -q "registry repository '$LISTENER/x' is not allowed on this cluster (allowed_registries in $work/trellis.toml: $host" &&
    pass "resolve refuses: $out" || fail "resolve of a registry not allowed: $status $out"
if [ ${#as_user[@]} -gt 0 ] || [ "$(id -u)" -ne 0 ]; then
    out=$(cd / && env -i PATH=/usr/bin:/bin HOME="$home" "${as_user[@]}" "$agent" launch --nproc-per-node 1 \
        --image "$elsewhere" --config "$work/trellis.toml" -- /bin/true 2>&1); status=$?
    [ $status -eq 3 ] && echo "$out" | grep -q "allowed_registries in $work/trellis.toml" &&
        pass "launch --image refuses: $(echo "$out" | tail -1)" || fail "launch --image of a registry not allowed: $status $out"
fi
sleep 0.2
[ ! -s "$work/accepts" ] && pass "no connection reached the refused registry" || fail "the refused registry was contacted"
# The listener does answer: the check above could fail.
python3 -c "import socket; socket.create_connection(('127.0.0.1', ${LISTENER#*:}), 1).close()"
sleep 0.2
[ -s "$work/accepts" ] || fail "the listener recorded no connection even when one was made"

[ $failures -eq 0 ] || exit 1
echo "all digest checks passed"
