#!/bin/bash
# Containers under a real Slurm (tests/slurm/cluster): srun --trellis-image runs each task in
# the step's OCI container (runc) on both nodes with its binding; PMIx works across nodes from
# inside; the user inside is the submitting user; refused and missing images and refused
# mounts stop srun with a clear error and start nothing; no container or state is left after
# a normal end, scancel, or kill -9 of srun, and one left by a killed slurmstepd is swept by
# the agent's next call. Skips (77) without root, Slurm, munge or runc.
set -u
. "$(dirname "$0")/harness.sh"
fixtures=${TRELLIS_FIXTURES:?}/topology
command -v runc >/dev/null || { echo "SKIP: runc not found (apt-get install runc)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: containers under Slurm need root"; exit 77; }

cleanup='runc list -q | grep "^trellis-n[12]-" | xargs -r -n1 runc delete -f'
make_cluster_dir trellis-slurm-container
"$here/../container/make_bundle" "$dir/bundle" "$build/tests/slurm/pmix_exchange" >/dev/null || exit $?
"$here/../container/make_bundle" "$dir/other-bundle" >/dev/null || exit $?
mkdir -p "$dir/shared" && echo "from the host" >"$dir/shared/note"
cat >"$dir/trellis.toml" <<TOML
[binding]
policy = "closest"
[container]
allowed_images = ["$dir/bundle"]
allowed_mounts = ["$dir/shared"]
agent = "$build/trellis-agent"
run_dir = "$dir/containers"
TOML
start_cluster "n2=$fixtures/two-level-switch-8gpu.xml"
image=(--trellis-image="$dir/bundle")
no_containers_left() {  # WHAT: no trellis container of this cluster and no state left
    local left
    for _ in $(seq 1 50); do
        left=$(runc list -q | grep -c "^trellis-n[12]-")
        [ "$left" -eq 0 ] && [ -z "$(ls "$dir/containers" 2>/dev/null)" ] && { pass "$1: nothing left"; return; }
        sleep 0.2
    done
    fail "$1: left behind: $(runc list -q | grep "^trellis-n[12]-" | tr '\n' ' ') $(ls "$dir/containers" 2>/dev/null | tr '\n' ' ')"
}

# 1. The command runs in the image on both nodes, with each task's binding.
timeout 60 srun -N2 -n4 --ntasks-per-node=2 "${image[@]}" --trellis-mounts="$dir/shared:/shared:ro" \
    sh -c 'echo "$SLURMD_NODENAME local=$TRELLIS_LOCAL_RANK gpus=$CUDA_VISIBLE_DEVICES $(cat /trellis-image-marker) $(cat /shared/note) $(grep Cpus_allowed_list /proc/self/status | tr -d "\t")"' \
    >"$dir/inside.out" 2>"$dir/inside.err"
rc=$?
cat "$dir/inside.out"
[ $rc -eq 0 ] || fail "srun in the image: status $rc: $(tail -n 5 "$dir/inside.err")"
[ "$(grep -c 'inside a trellis test image from the host' "$dir/inside.out")" -eq 4 ] &&
    pass "4 tasks on n1 and n2 ran in the image and see the mount" || fail "not every task ran in the image"
grep -q "^n1 local=1 .*Cpus_allowed_list:" "$dir/inside.out" && pass "the binding reaches the tasks inside" ||
    fail "no binding inside"
# A GPU step: its tasks see the GPUs Slurm gave it, numbered as inside their cgroup, and the
# container has exactly those GPUs' device files (by minor number: n2's are not in PCI order).
timeout 60 srun -w n2 -n2 --gres=gpu:2 "${image[@]}" sh -c \
    'echo "$SLURMD_NODENAME local=$TRELLIS_LOCAL_RANK gpus=$CUDA_VISIBLE_DEVICES devices=$(ls /dev | grep "^nvidia[0-9]" | tr "\n" " ")"' \
    >"$dir/gpus.out" 2>"$dir/gpus.err"
cat "$dir/gpus.out"
grep -q "^n2 local=0 gpus=0 devices=nvidia0 nvidia1 $" "$dir/gpus.out" &&
    grep -q "^n2 local=1 gpus=1 devices=nvidia0 nvidia1 $" "$dir/gpus.out" &&
    pass "a GPU step in the image: its GPUs as its cgroup numbers them, their device files bound in" ||
    fail "GPU step in the image: $(cat "$dir/gpus.out" "$dir/gpus.err")"
[ "$(grep -c "Cpus_allowed_list:" "$dir/inside.out")" -eq 4 ] || fail "no CPU list inside"
no_containers_left "after a normal end"

# Eight tasks of one node ask for the step's container at the same moment: one is made
# (under the run directory's lock) and every task joins it.
timeout 60 srun -N1 -n8 -O -w n1 "${image[@]}" sh -c 'cat /trellis-image-marker' >"$dir/eight.out" 2>"$dir/eight.err"
[ "$(grep -c "inside a trellis test image" "$dir/eight.out")" -eq 8 ] &&
    pass "8 concurrent tasks on n1 share the step's container" || fail "8 tasks: $(cat "$dir/eight.out" "$dir/eight.err")"

# 2. A PMIx client inside the container exchanges keys across both nodes.
timeout 60 srun -N2 -n4 --mpi=pmix "${image[@]}" /usr/local/bin/pmix_exchange >"$dir/pmix.out" 2>"$dir/pmix.err"
[ "$(grep -c 'sees: rank 0 on n1; rank 1 on n1; rank 2 on n2; rank 3 on n2' "$dir/pmix.out")" -eq 4 ] &&
    pass "PMIx exchange across n1 and n2 from inside the container" ||
    fail "pmix in the container: $(tail -n 5 "$dir/pmix.out" "$dir/pmix.err")"

# 3. The user inside is the submitting user.
uid=$(id -u "$job_user")
user_step() { (cd /tmp && timeout 60 runuser -u "$job_user" -- env SLURM_CONF="$SLURM_CONF" srun -N1 -n1 --chdir=/tmp "$@"); }
inside=$(user_step "${image[@]}" sh -c 'id -u; cat /trellis-image-marker' 2>&1)
echo "$inside" | grep -qx "$uid" && echo "$inside" | grep -q "inside a trellis test image" &&
    pass "the user inside is the submitting user (uid $uid)" || fail "user inside: $inside"
# The container's own first process is the user's too, not root's.
user_step "${image[@]}" sleep 10 >"$dir/user-sleep.out" 2>&1 &
for _ in $(seq 1 100); do first=$(runc list | awk '/^trellis-n[12]-/ && $3 == "running" {print $2}'); [ -n "$first" ] && break; sleep 0.1; done
owner=$(ps -o user= -p "${first:-0}")
[ "$owner" = "$job_user" ] && pass "the container's first process runs as $job_user" ||
    fail "the container's first process (pid ${first:-none}) runs as '${owner}': $(runc list)"
wait
# The container's /tmp is writable by the user even when the image's folder is 0755 (runc
# gives a tmpfs the mode of the folder beneath it).
chmod 0755 "$dir/bundle/rootfs/tmp"
tmp=$(user_step "${image[@]}" sh -c 'touch /tmp/x && stat -c %a /tmp' 2>&1)
chmod 1777 "$dir/bundle/rootfs/tmp"
[ "$tmp" = 1777 ] && pass "/tmp in a container of a 0755-/tmp image: 1777, writable by the user" ||
    fail "/tmp in the container: $tmp"

# 4. Refusals: nothing starts, the message says why.
refused() {  # NAME EXPECTED SRUN-ARGS...
    local name=$1 expected=$2
    shift 2
    timeout 60 srun -N2 -n2 "$@" sh -c 'echo STARTED' >"$dir/$name.out" 2>"$dir/$name.err"
    local rc=$?
    if [ $rc -ne 0 ] && ! grep -q STARTED "$dir/$name.out" && grep -q -- "$expected" "$dir/$name.err"; then
        pass "$name: refused: $(grep -m1 -- "$expected" "$dir/$name.err")"
    else
        fail "$name: status $rc, output $(cat "$dir/$name.out"), errors $(cat "$dir/$name.err")"
    fi
}
refused image_not_allowed "is not allowed on this cluster" --trellis-image="$dir/other-bundle"
refused mount_not_allowed "is not under an allowed prefix" "${image[@]}" --trellis-mounts=/etc:/host-etc
refused missing_image "does not exist" --trellis-image="$dir/no-such-bundle"
refused bad_mount_syntax "accepted: SRC:DST" "${image[@]}" --trellis-mounts=relative:/x
TRELLIS_IMAGE="$dir/other-bundle" refused image_from_environment "is not allowed on this cluster"
no_containers_left "after the refusals"

# 5. scancel and kill -9 of srun: the step ends and its containers go.
for how in scancel kill; do
    srun -N2 -n2 --job-name="container-$how" "${image[@]}" sleep 300 >/dev/null 2>&1 &
    srun_pid=$!
    for _ in $(seq 1 100); do [ "$(runc list -q | grep -c "^trellis-n[12]-")" -eq 2 ] && break; sleep 0.1; done
    [ "$(runc list -q | grep -c "^trellis-n[12]-")" -eq 2 ] || fail "$how: the containers did not start"
    if [ $how = scancel ]; then scancel --name="container-$how"; else kill -9 $srun_pid; fi
    wait $srun_pid 2>/dev/null
    no_containers_left "after $how"
done

# 6. slurmstepd itself killed: nothing releases the container then; the agent's next call on
# the node (here the health check, as root) sweeps it, since its owner is gone.
srun -N1 -n1 -w n1 --job-name=container-stepd "${image[@]}" sleep 60 >/dev/null 2>&1 &
srun_pid=$!
for _ in $(seq 1 100); do [ "$(runc list -q | grep -c "^trellis-n1-")" -eq 1 ] && break; sleep 0.1; done
id=$(runc list -q | grep "^trellis-n1-")
if [ -n "$id" ]; then
    step=${id#trellis-n1-}
    pkill -9 -f "slurmstepd: \[$step\]"
    sleep 1
    swept=$("$build/trellis-agent" check --json --config "$dir/trellis.toml" | python3 -c "import json,sys; print(json.load(sys.stdin)['swept_containers'])")
    [ "$swept" -ge 1 ] && [ -z "$(runc list -q | grep "^$id\$")" ] && [ ! -e "$dir/containers/$id" ] &&
        pass "after kill -9 of slurmstepd: the next agent call swept $id" ||
        fail "after kill -9 of slurmstepd: swept ${swept:-nothing}, left: $(runc list -q) $(ls "$dir/containers")"
else
    fail "slurmstepd kill: the container did not start"
fi
scancel --name=container-stepd 2>/dev/null
kill -9 $srun_pid 2>/dev/null
wait $srun_pid 2>/dev/null

echo "container tests: $failures failures"
[ "$failures" -eq 0 ]
