#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# How a registry image reaches the nodes of a step, on a 4-node test cluster whose nodes each
# have an image cache of their own (a folder in each node's private /var/tmp), as real nodes
# have, with PrologFlags=Alloc:
#  - each node importing the image itself (image_broadcast = false), a step on N nodes asks
#    the registry for every blob N times and builds N squashfs files; with the broadcast (the
#    default) srun pulls and builds once, before the step exists, and the nodes get the
#    squashfs by sbcast before the launch, also for one node: blob
#    requests and squashfs builds at 1, 2 and 4 nodes, both ways, in one table, with the
#    step's time from srun's start to its end and the time srun took to import and send it;
#  - no rank waits in PMIx's fence for another node's image (PMIxTimeout=3 in mpi.conf): each
#    node importing, n2's import held back 6 s (its digest's lock held) fails the step with a
#    fence timeout; with the broadcast, n2's slurmd stopped 6 s as srun sends the image (in an
#    allocation whose prologs ran, the image already on srun's host), the PMIx exchange across
#    n1 and n2 works and srun says the sending took that long.
# Skips (77) without root, Slurm, munge, docker-registry, skopeo, umoci, mksquashfs,
# squashfuse, fuse-overlayfs, sbcast or /dev/fuse.
set -u
. "$(dirname "$0")/harness.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the test cluster needs root"; exit 77; }
. "$here/../container/registry.sh"
missing=$(registry_missing mksquashfs squashfuse fuse-overlayfs sbcast | tr '\n' ' ')
[ -z "$missing" ] || { echo "SKIP: missing $missing(scripts/install-deps)"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
cleanup=registry_stop

make_cluster_dir trellis-slurm-spread
registry_start "$dir/registry" && registry_auth_at "$dir/userhome/auth.json" || exit 1
# TRELLIS_SPREAD_PROGRAM=PATH: the image holds that program and its libraries (make_bundle),
# e.g. trellis-train for figures at a real image's size, instead of busybox.
if [ -n "${TRELLIS_SPREAD_PROGRAM:-}" ]; then
    "$here/../container/make_bundle" "$dir/big" "$TRELLIS_SPREAD_PROGRAM" >/dev/null &&
        echo one >"$dir/big/rootfs/what" && registry_image_from big "$dir/big/rootfs" && registry_push_as big x:tag &&
        digest=$(cat "$REGISTRY_DIR/pushed") || { fail "cannot push an image of $TRELLIS_SPREAD_PROGRAM"; exit 1; }
    rm -rf "$dir/big"
else
    registry_build_images && digest=$(registry_push_text x:tag one) || { fail "cannot push the test image"; exit 1; }
fi
manifest=$(skopeo inspect --raw --authfile "$REGISTRY_AUTH" --tls-verify=false "docker://$REGISTRY/x@$digest")
blobs=$(python3 -c 'import json,sys; print(1 + len(json.loads(sys.argv[1])["layers"]))' "$manifest")
echo "the image: $(python3 -c 'import json,sys; print(sum(l["size"] for l in json.loads(sys.argv[1])["layers"]) // 1024)' "$manifest") KiB of layers"
pmix_image=0
if [ -x "$build/tests/slurm/pmix_exchange" ]; then
    "$here/../container/make_bundle" "$dir/pmix-bundle" "$build/tests/slurm/pmix_exchange" >/dev/null &&
        registry_image_from pmix "$dir/pmix-bundle/rootfs" && registry_push_as pmix x:pmix &&
        pmix_digest=$(cat "$REGISTRY_DIR/pushed") && pmix_image=1
    rm -rf "$dir/pmix-bundle"
fi
cache=/var/tmp/$(basename "$dir")/images
staging=$dir/userhome/cache/trellis/images  # srun's host: the job user's own folder
broadcast() { registry_config "$dir/trellis.toml" "$cache" "image_broadcast = $1"; }
broadcast true
TRELLIS_CLUSTER_NODES=4 TRELLIS_CLUSTER_PROLOG_FLAGS=Alloc TRELLIS_CLUSTER_MPI_CONF=PMIxTimeout=3 start_cluster
chown -R "$job_user" "$dir/userhome"
[ -f "$dir/no-mpi-pmix" ] && pmix_image=0
uid=$(id -u "$job_user")
node_root() { echo "/proc/$(cat "$dir/run/slurmd-$1.pid")/root"; }
for node in n1 n2 n3 n4; do
    install -d -m 0755 "$(node_root $node)${cache%/images}" "$(node_root $node)$cache" ||
        { fail "cannot make $node's image cache"; exit 1; }
done
# Every cache empty: the nodes' user folders and srun's own.
forget_images() {
    for node in n1 n2 n3 n4; do rm -rf "$(node_root $node)$cache/$uid"; done
    rm -rf "$staging"
}

srun_as() {  # NAME -- SRUN-ARGS: as the job user with their credentials, tasks' output in NAME.out
    local name=$1
    shift 2
    as_user env HOME="$dir/userhome" XDG_CACHE_HOME="$dir/userhome/cache" REGISTRY_AUTH_FILE="$dir/userhome/auth.json" \
        srun -o "$dir/user/$name.out-%t" "$@" >"$dir/$name.err" 2>&1
    local status=$?
    cat "$dir/user/$name".out-* >"$dir/$name.out" 2>/dev/null
    return $status
}
blob_requests() { registry_requests '"GET /v2/x/blobs/'; }

# 1. Blob requests and squashfs builds per step, each way, from empty caches.
table="nodes  way        blob requests  squashfs builds  step (s)  srun's import, send (s)"
for way in node broadcast; do
    broadcast "$([ $way = broadcast ] && echo true || echo false)"
    for n in 1 2 4; do
        forget_images
        before=$(blob_requests)
        started=$(date +%s.%N)
        srun_as "$way-$n" -- -N$n -n$n --trellis-verbose --trellis-image="docker://$REGISTRY/x:tag" sh -c 'cat /what'
        rc=$?
        took=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
        requests=$(($(blob_requests) - before))
        built=$(cat "$dir/$way-$n.err" "$dir/$way-$n.out" | grep -c "into this node's image cache")
        srun_line=$(grep "on srun's host in" "$dir/$way-$n.err")
        [ -n "$srun_line" ] && grep -q "imported on srun's host" <<<"$srun_line" && built=$((built + 1))
        times=$(sed -nE "s/.* in ([0-9.]+) s and sent to the step's nodes in ([0-9.]+) s.*/\1, \2/p" <<<"$srun_line")
        table+=$'\n'"$(printf '%-6s %-10s %-14s %-16s %-9.2f %s' "$n" "$way" "$requests" "$built" "$took" "${times:--}")"
        [ $rc -eq 0 ] && [ "$(grep -cx one "$dir/$way-$n.out")" -eq $n ] ||
            { fail "$way, $n nodes: status $rc: $(cat "$dir/$way-$n.err")"; continue; }
        if [ $way = node ]; then
            [ "$requests" -eq $((n * blobs)) ] && [ "$built" -eq $n ] &&
                pass "$way, $n node(s): each node fetched the $blobs blobs ($requests requests) and built its squashfs" ||
                fail "$way, $n node(s): $requests blob requests (expected $((n * blobs))), $built builds (expected $n)"
        else
            [ "$requests" -eq "$blobs" ] && [ "$built" -eq 1 ] && [ -n "$times" ] &&
                pass "broadcast, $n node(s): $requests blob requests and one squashfs build for the step ($srun_line)" ||
                fail "broadcast, $n node(s): $requests blob requests (expected $blobs), $built builds (expected 1): $(cat "$dir/$way-$n.err")"
            sqsh=0
            for node in $(seq -f 'n%g' 1 $n); do
                [ -f "$(node_root $node)$cache/$uid/${digest#sha256:}.sqsh" ] && sqsh=$((sqsh + 1))
            done
            left=$(ls "$(node_root n1)$cache/$uid" | grep -c '\.sent-')
            [ $sqsh -eq $n ] && [ "$left" -eq 0 ] && pass "broadcast, $n node(s): each node's cache holds the image, no sent file left" ||
                fail "broadcast, $n node(s): $sqsh of $n caches hold the image, $left sent files left on n1"
        fi
    done
done
echo "$table"

# 2. No fence timeout. PMIxTimeout=3; the image reaches n2 6 s after n1.
if [ $pmix_image -eq 0 ]; then
    echo "SKIP row: the fence: $(cat "$dir/no-mpi-pmix" 2>/dev/null || echo "the PMIx probe (tests/slurm/pmix_exchange) is not built")"
else
    pmix=(-N2 -n2 --mpi=pmix --trellis-verbose --trellis-image="docker://$REGISTRY/x@$pmix_digest" /usr/local/bin/pmix_exchange)
    # Each node importing: n2's import waits 6 s on its digest's lock; n1's rank times out.
    broadcast false
    forget_images
    lock=$(node_root n2)$cache/$uid/${pmix_digest#sha256:}.lock
    install -d -m 0700 -o "$job_user" "$(dirname "$lock")" && install -m 0600 -o "$job_user" /dev/null "$lock"
    flock -x "$lock" sleep 6 &
    holder=$!
    srun_as fence-node -- "${pmix[@]}"
    rc=$?
    wait $holder
    # Slurm's PMIx plugin resets a collective that timed out (pmixp_coll_*_reset_if_to).
    timed_out=$(grep -h -m1 'reset_if_to' "$dir/fence-node.err" "$dir/fence-node.out" | cut -c1-160)
    [ $rc -ne 0 ] && [ -n "$timed_out" ] &&
        pass "each node importing, n2 6 s late: n1's fence timed out ($timed_out)" ||
        fail "each node importing, n2 6 s late: no fence timeout (status $rc): $(cat "$dir/fence-node.err" "$dir/fence-node.out")"
    # The broadcast, in a job already allocated (its prologs done): a first step imports the
    # image on srun's host; then n2's slurmd is stopped for 6 s as the second step starts, so
    # the image reaches n2 6 s late, while srun sends it.
    broadcast true
    forget_images
    job=$(as_user sbatch -N2 -o /dev/null --parsable --wrap 'sleep 300')
    # srun --jobid refuses a job still pending (the nodes of the steps before may be completing).
    for _ in $(seq 120); do [ "$(squeue -h -j "$job" -o %T)" = RUNNING ] && break; sleep 0.5; done
    srun_as fence-first -- --jobid="$job" --overlap -N2 -n2 --trellis-image="docker://$REGISTRY/x@$pmix_digest" true ||
        fail "the first step of the job: $(cat "$dir/fence-first.err")"
    kill -STOP "$(cat "$dir/run/slurmd-n2.pid")"
    srun_as fence-broadcast -- --jobid="$job" --overlap "${pmix[@]}" &
    step=$!
    sleep 6
    kill -CONT "$(cat "$dir/run/slurmd-n2.pid")"
    wait $step
    rc=$?
    scancel "$job"
    send=$(sed -nE "s/.*sent to the step's nodes in ([0-9.]+) s.*/\1/p" "$dir/fence-broadcast.err")
    [ $rc -eq 0 ] && [ "$(grep -c 'sees: rank 0 on n1; rank 1 on n2' "$dir/fence-broadcast.out")" -eq 2 ] &&
        awk -v s="${send:-0}" 'BEGIN { exit !(s >= 3) }' &&
        pass "broadcast, n2's slurmd stopped 6 s: sending took $send s, and the PMIx exchange across n1 and n2 worked" ||
        fail "broadcast with n2 late: status $rc, sending took ${send:-?} s: $(cat "$dir/fence-broadcast.err" "$dir/fence-broadcast.out")"
fi

echo "image spread tests: $failures failures"
[ "$failures" -eq 0 ]
