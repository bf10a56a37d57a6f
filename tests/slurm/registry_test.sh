#!/bin/bash
# srun and registry images, on the test cluster, as the unprivileged job user: a registry
# that allowed_registries does not list stops srun before anything starts, in one line naming
# the setting and trellis.toml, and no connection reaches it (a listener that records
# accepts); missing credentials stop srun saying so; an allowed tag is resolved by srun once
# for a 2-node step (one tag lookup in the registry's log, whatever the nodes do) and the
# verbose report names the digest, which the nodes take (they never say srun handed none); a
# reference pinned with @sha256: makes no tag lookup. Skips (77) without root, Slurm, munge,
# docker-registry, skopeo or umoci.
set -u
. "$(dirname "$0")/harness.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the test cluster needs root"; exit 77; }
. "$here/../container/registry.sh"
missing=$(registry_missing | tr '\n' ' ')
[ -z "$missing" ] || { echo "SKIP: missing $missing(scripts/install-deps)"; exit 77; }
cleanup=registry_stop

make_cluster_dir trellis-slurm-registry
registry_start "$dir/registry" && registry_auth_at "$dir/userhome/auth.json" || exit 1
digest=$(registry_push_text x:tag one) || { fail "cannot push the test image"; exit 1; }

# A registry nobody may use: a listener that writes down every connection it accepts.
registry_listener "$dir/accepts" || exit 1

cat >"$dir/trellis.toml" <<TOML
[binding]
policy = "closest"
[container]
allowed_registries = ["$REGISTRY/x"]
insecure_registries = ["$REGISTRY"]
agent = "$build/trellis-agent"
TOML
start_cluster
chown -R "$job_user" "$dir/userhome"
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

echo "registry tests: $failures failures"
[ "$failures" -eq 0 ]
