#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# srun and registry images, on the test cluster, as the unprivileged job user: a registry
# that allowed_registries does not list stops srun before anything starts, in one line naming
# the setting and trellis.toml, and no connection reaches it (a listener that records
# accepts); missing credentials stop srun saying so; an allowed tag is resolved by srun once
# for a 2-node step (one tag lookup in the registry's log, whatever the nodes do) and the
# verbose report names the digest, which the nodes take (they never say srun handed none); a
# reference pinned with @sha256: makes no tag lookup. Then the tasks run in the pulled image
# on both nodes: its file, ENV and WORKDIR (the ENTRYPOINT ignored); a second step of the same
# image makes no blob request and each node's cache (a folder in that node's private /var/tmp)
# holds one squashfs for it; no squashfuse and no mount of the cache outlives the steps; a
# PMIx client in a pulled image exchanges keys across both nodes. Skips (77) without root,
# Slurm, munge, docker-registry, skopeo, umoci, mksquashfs, squashfuse or /dev/fuse.
set -u
. "$(dirname "$0")/harness.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the test cluster needs root"; exit 77; }
. "$here/../container/registry.sh"
missing=$(registry_missing mksquashfs squashfuse fuse-overlayfs | tr '\n' ' ')
[ -z "$missing" ] || { echo "SKIP: missing $missing(scripts/install-deps)"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
cleanup=registry_stop

make_cluster_dir trellis-slurm-registry
registry_start "$dir/registry" && registry_auth_at "$dir/userhome/auth.json" || exit 1
# x:full: ENV FROM_IMAGE=yes, WORKDIR /work, an ENTRYPOINT, /olddir/d (registry.sh).
registry_build_images && registry_push x full || { fail "cannot build or push the test images"; exit 1; }
digest=$(registry_push_text x:tag one) || { fail "cannot push the test image"; exit 1; }
# x:pmix: the PMIx probe with its libraries and PMIx's plugins (make_bundle's root).
pmix_image=0
if [ -x "$build/tests/slurm/pmix_exchange" ]; then
    "$here/../container/make_bundle" "$dir/pmix-bundle" "$build/tests/slurm/pmix_exchange" >/dev/null &&
        umoci new --image "$REGISTRY_DIR/images:pmix" &&
        umoci unpack --image "$REGISTRY_DIR/images:pmix" "$dir/pmix-tree" >/dev/null &&
        cp -a "$dir/pmix-bundle/rootfs/." "$dir/pmix-tree/rootfs/" &&
        umoci repack --image "$REGISTRY_DIR/images:pmix" "$dir/pmix-tree" >/dev/null &&
        registry_push_as pmix x:pmix && pmix_image=1
    rm -rf "$dir/pmix-tree" "$dir/pmix-bundle"
fi
# Each node's image cache: in its private /var/tmp (tests/slurm/cluster), root's and 0755, as
# the package makes it; the plugin makes the user's folder in it at the step's start.
cache=/var/tmp/$(basename "$dir")/images

# A registry nobody may use: a listener that writes down every connection it accepts.
registry_listener "$dir/accepts" || exit 1

registry_config "$dir/trellis.toml" "$cache"
start_cluster
chown -R "$job_user" "$dir/userhome"
uid=$(id -u "$job_user")
node_root() { echo "/proc/$(cat "$dir/run/slurmd-$1.pid")/root"; }
for node in n1 n2; do
    install -d -m 0755 "$(node_root $node)${cache%/images}" && install -d -m 0755 "$(node_root $node)$cache" ||
        { fail "cannot make $node's image cache"; exit 1; }
done
# On n2 another user holds a folder under the job user's uid, as an older trellis's 1777 cache
# let anyone make (the review's R2); no user can make one any more:
# the plugin puts it aside as root and makes the user's own.
squatter=trellistest2
id "$squatter" >/dev/null 2>&1 || useradd -M -s /bin/sh "$squatter"
install -d -m 0700 -o "$squatter" "$(node_root n2)$cache/$uid"
! setpriv --reuid="$squatter" --regid="$squatter" --init-groups mkdir "$(node_root n1)$cache/$uid" 2>/dev/null &&
    pass "no user can make another's folder in the 0755 cache" || fail "a user made a folder in the cache"
tag_lookups() { registry_requests '"GET /v2/x/manifests/tag '; }

# srun_as NAME [VAR=VALUE...] -- SRUN-ARGS: srun as the job user with only these variables
# of theirs (their credentials and cache), its messages in NAME.err, the tasks' in NAME.out.
srun_as() {
    local name=$1 vars=()
    shift
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    as_user env HOME="$dir/userhome" XDG_CACHE_HOME="$dir/userhome/cache" "${vars[@]}" \
        srun -o "$dir/user/$name.out-%t" "$@" >"$dir/$name.err" 2>&1
    local status=$?
    cat "$dir/user/$name".out-* >"$dir/$name.out" 2>/dev/null
    return $status
}
creds=(REGISTRY_AUTH_FILE="$dir/userhome/auth.json")

# 1. Not in allowed_registries: srun stops in one line, before anything starts, no connection.
srun_as refused "${creds[@]}" -- -N2 -n2 --trellis-image="docker://$LISTENER/x:tag" sh -c 'echo STARTED'
rc=$?
line=$(grep "allowed_registries in $dir/trellis.toml: $REGISTRY/x; accepted:" "$dir/refused.err")
[ $rc -ne 0 ] && ! grep -q STARTED "$dir/refused.out" && [ "$(echo "$line" | grep -c .)" -eq 1 ] &&
    pass "refused in srun: $line" || fail "refused registry: status $rc: $(cat "$dir/refused.err" "$dir/refused.out")"
sleep 0.3
[ -f "$dir/accepts" ] && [ ! -s "$dir/accepts" ] && pass "no connection reached the refused registry" ||
    fail "the refused registry was contacted (or the listener did not start)"
srun_as other_repository "${creds[@]}" -- -N1 --trellis-image="docker://$REGISTRY/y:tag" true
grep -q "registry repository '$REGISTRY/y' is not allowed" "$dir/other_repository.err" &&
    pass "another repository of an allowed registry is refused" || fail "repository y: $(cat "$dir/other_repository.err")"

# 2. No credentials: srun says so, and nothing starts.
srun_as unauthorized -- -N1 --trellis-image="docker://$REGISTRY/x:tag" sh -c 'echo STARTED'
rc=$?
[ $rc -ne 0 ] && ! grep -q STARTED "$dir/unauthorized.out" && grep -q "refused access (unauthorized): no credentials were found" "$dir/unauthorized.err" &&
    pass "missing credentials stop srun: $(grep -m1 unauthorized "$dir/unauthorized.err")" ||
    fail "missing credentials: status $rc: $(cat "$dir/unauthorized.err")"

# 3. Resolved once by srun for both nodes; the report names the digest; the nodes take it.
before=$(tag_lookups)
srun_as resolved "${creds[@]}" -- -N2 -n2 --trellis-verbose --trellis-image="docker://$REGISTRY/x:tag" true
after=$(tag_lookups)
grep -q "trellis: docker://$REGISTRY/x:tag is docker://$REGISTRY/x@$digest (resolved by srun)" "$dir/resolved.err" &&
    pass "srun resolved the tag to $digest" || fail "no digest in srun's report: $(cat "$dir/resolved.err")"
[ $((after - before)) -eq 1 ] && pass "one tag lookup for a 2-node step" || fail "tag lookups: $before -> $after"
echo "the nodes said: $(grep -h "trellis: container" "$dir"/log/*.log 2>/dev/null | tail -n 2)"
grep -q "srun handed no digest" "$dir/resolved.err" "$dir"/log/*.log 2>/dev/null && fail "a node did not get the digest: $(cat "$dir/resolved.err")"
grep -q "$REGISTRY_PASSWORD" "$dir/resolved.err" "$dir"/log/*.log && fail "the registry password is in a log"

# 4. A pinned reference: no tag lookup at all.
before=$(tag_lookups)
srun_as pinned "${creds[@]}" -- -N1 --trellis-image="docker://$REGISTRY/x@$digest" true
[ "$(tag_lookups)" -eq "$before" ] && ! grep -q "resolved by srun" "$dir/pinned.err" &&
    pass "a pinned reference is not looked up" || fail "pinned: $(cat "$dir/pinned.err")"

# 5. The tasks run in the pulled image, on both nodes. x:tag was imported by each node in 3:
#    this second step fetches no blob, and each node's cache holds that one squashfs. The
#    image has no /var: Slurm's PMIx folder (/var/tmp/spmix_appdir_*, MpiDefault=pmix) is made
#    at the top of the container's overlay, never in the image.
blobs_before=$(registry_requests '"GET /v2/x/blobs/')
srun_as run "${creds[@]}" -- -N2 -n2 --trellis-image="docker://$REGISTRY/x:tag" \
    sh -c 'echo "$SLURMD_NODENAME $(cat /what)"'
rc=$?
[ $rc -eq 0 ] && grep -qx "n1 one" "$dir/run.out" && grep -qx "n2 one" "$dir/run.out" &&
    pass "the pulled image's /what on n1 and n2: $(tr '\n' ' ' <"$dir/run.out")" ||
    fail "tasks in the pulled image: status $rc: $(cat "$dir/run.out" "$dir/run.err")"
blobs_after=$(registry_requests '"GET /v2/x/blobs/')
[ "$blobs_before" -gt 0 ] && [ "$blobs_after" -eq "$blobs_before" ] &&
    pass "the second step made no blob request (the first import made $blobs_before)" ||
    fail "blob requests: $blobs_before before the second step, $blobs_after after"
for node in n1 n2; do
    [ "$(stat -c '%U %a' "$(node_root $node)$cache/$uid")" = "$job_user 700" ] &&
        pass "$node: the plugin made $cache/$uid, the job user's, 0700" ||
        fail "$node's user folder: $(stat -c '%U %a' "$(node_root $node)$cache/$uid")"
    sqsh=$(ls "$(node_root $node)$cache/$uid/" 2>/dev/null | grep -c '\.sqsh$')
    [ "$sqsh" -eq 1 ] && pass "$node's cache holds one squashfs: $(ls "$(node_root $node)$cache/$uid/" | grep '\.sqsh$')" ||
        fail "$node's cache: $sqsh squashfs files: $(ls -la "$(node_root $node)$cache/$uid/" 2>&1)"
done
aside=$(ls -d "$(node_root n2)$cache/$uid".refused-* 2>/dev/null)
[ -n "$aside" ] && [ "$(stat -c %U "$aside")" = "$squatter" ] &&
    pass "n2: the squatter's folder was put aside ($(basename "$aside")), and the job user's import went on" ||
    fail "n2: no folder put aside: $(ls -la "$(node_root n2)$cache")"

# The image's ENV and WORKDIR apply, its ENTRYPOINT does not unless asked for.
srun_as settings "${creds[@]}" -- -N2 -n2 --trellis-image="docker://$REGISTRY/x:full" \
    sh -c 'echo "$SLURMD_NODENAME from=$FROM_IMAGE pwd=$(pwd) d=$(cat /olddir/d)"'
rc=$?
[ $rc -eq 0 ] && grep -qx "n1 from=yes pwd=/work d=d" "$dir/settings.out" &&
    grep -qx "n2 from=yes pwd=/work d=d" "$dir/settings.out" && ! grep -q entrypoint-ran "$dir/settings.out" &&
    pass "the image's ENV and WORKDIR on both nodes, its ENTRYPOINT ignored" ||
    fail "the image's settings: status $rc: $(cat "$dir/settings.out" "$dir/settings.err")"

# 6. A PMIx client in a pulled image exchanges keys across both nodes.
if [ $pmix_image -eq 1 ]; then
    srun_as pmix "${creds[@]}" -- -N2 -n2 --mpi=pmix --trellis-image="docker://$REGISTRY/x:pmix" /usr/local/bin/pmix_exchange
    [ "$(grep -c 'sees: rank 0 on n1; rank 1 on n2' "$dir/pmix.out")" -eq 2 ] &&
        pass "PMIx exchange across n1 and n2 in a pulled image" ||
        fail "PMIx in the pulled image: $(tail -n 5 "$dir/pmix.out" "$dir/pmix.err")"
else
    echo "SKIP row: PMIx in a pulled image: the probe (tests/slurm/pmix_exchange) is not built or its image was not made"
fi

# 7. After the steps: no squashfuse reading the cache, no mount of it, on any node.
daemons() {
    for p in $(pgrep -u "$job_user" -x squashfuse) $(pgrep -u "$job_user" -x fuse-overlayfs); do
        { ls -l /proc/$p/fd; cat /proc/$p/cmdline; } 2>/dev/null | grep -q "$(basename "$dir")/images" && echo $p
    done
}
left=
for _ in $(seq 1 50); do
    left="$(daemons)$(grep -ls "$(basename "$dir")/images" /proc/[0-9]*/mountinfo)"
    [ -z "$left" ] && break
    sleep 0.2
done
[ -z "$left" ] && pass "after the steps: no squashfuse process and no mount of the cache" ||
    fail "left after the steps: $left"

echo "registry tests: $failures failures"
[ "$failures" -eq 0 ]
