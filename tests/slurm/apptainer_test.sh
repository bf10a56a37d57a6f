#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# .sif images through the real Apptainer under a real Slurm (tests/slurm/cluster), with no test
# double: the images are made here by the cluster's unprivileged user with `apptainer build`
# from tests/container/make_bundle's folder, then given to root (trellis serves only root's
# images). srun --trellis-image=x.sif on two nodes: the settings' rules as a .sif has them (no
# Env or WorkingDir of its own), --trellis-mounts, PMIx across the nodes into the image, the
# step's GPUs as bound device files; refused images refused before anything starts; then
# `trellis-agent launch --image x.sif`. After each, nothing of Apptainer's runs (its
# squashfuse_ll included) and no process holds the image mounted.
# It runs where Apptainer 1.4 is installed: the Debian 13 root of tests/debian/slurm_release.sh
# (Apptainer from unstable). Elsewhere it skips (77) saying what is missing; the Debian 12 host
# has no Apptainer, and its suites run .sif steps through tests/container/apptainer-test-double.
set -u
skip() { echo "SKIP: $*"; exit 77; }
. "$(dirname "$0")/harness.sh"
[ "$(id -u)" -eq 0 ] || skip "the test cluster needs root"
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] ||
    skip "user namespaces are off (user.max_user_namespaces = 0): Apptainer's user-namespace mode cannot run"
[ -x "$build/tests/slurm/pmix_exchange" ] || skip "the PMIx probe was not built (configure found no PMIx)"
if ! apptainer=$(command -v apptainer); then
    # The Debian roots note a pinned version their mirror lacked (tests/debian/root.sh).
    missing=$(grep -s '^apptainer ' /.trellis-root-missing)
    skip "Apptainer is not installed here${missing:+ (the root was made without $missing; a root removed is made again)}; tests/debian/slurm_release.sh trixie runs this suite with Apptainer 1.4 from Debian unstable"
fi
version=$("$apptainer" --version)
echo "$version ($apptainer)"
[[ $version == "apptainer version 1.4."* ]] || skip "$version: this suite is written for Apptainer 1.4 (Debian's 1.4.5)"
fixtures=${TRELLIS_FIXTURES:?}/topology

make_cluster_dir trellis-slurm-apptainer
"$here/../container/make_bundle" "$dir/bundle" "$build/tests/slurm/pmix_exchange" >/dev/null || exit $?
mkdir -p "$dir/shared" "$dir/other" && echo "from the host" >"$dir/shared/note"
# A marker of this run's image: its containers' processes are told apart from other tests'.
echo "$dir" >"$dir/bundle/rootfs/apptainer-test-image"
cat >"$dir/trellis.toml" <<TOML
[container]
allowed_images = ["$dir/*.sif"]
allowed_mounts = ["$dir/shared", "$dir/user"]
agent = "$build/trellis-agent"
apptainer = "$apptainer"
TOML
start_cluster "n2=$fixtures/two-level-switch-8gpu.xml"
uid=$(id -u "$job_user")

# The image, built by the user (Apptainer's cache and temporary files in their folder), then
# root's: a copy that only root can change, as a site's image store holds.
began=$SECONDS
as_user env APPTAINER_CACHEDIR="$dir/user/cache" APPTAINER_TMPDIR="$dir/user" \
    "$apptainer" build "$dir/user/x.sif" "$dir/bundle/rootfs" >"$dir/build.out" 2>&1 ||
    { tail -n 20 "$dir/build.out"; fail "apptainer build x.sif from make_bundle's folder, as $job_user"; exit 1; }
# Read as the user (root follows no link of theirs), written as root.
as_user cat "$dir/user/x.sif" >"$dir/x.sif" && chmod 0644 "$dir/x.sif" || { fail "cannot read the user's x.sif"; exit 1; }
cp "$dir/x.sif" "$dir/other/x.sif"
# An allowed name the user owns, and one root owns that is no image at all.
install -m 0644 -o "$job_user" "$dir/x.sif" "$dir/users-own.sif"
head -c 65536 /dev/urandom >"$dir/not-an-image.sif"
pass "apptainer build x.sif from make_bundle's folder as $job_user: $(stat -c %s "$dir/x.sif") bytes in $((SECONDS - began)) s"
image=(--trellis-image="$dir/x.sif")

# What Apptainer leaves: its processes (the runtime, its squashfuse_ll, the container's) and
# any process whose mount table holds a squashfuse_ll mount (Apptainer's way of serving the
# image; trellis's own squashfs path runs squashfuse, which the tests outside this root run).
apptainer_left() {
    local p command
    for p in /proc/[0-9]*; do
        command=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
        if [[ $command == "Apptainer runtime"* || $command == *squashfuse_ll* || $command == *apptainer/bin/starter* ]]; then
            echo "${p#/proc/} $command"
        elif [ "$(cat "$p/root/apptainer-test-image" 2>/dev/null)" = "$dir" ]; then
            echo "${p#/proc/} in the image: $command"
        fi
    done
    grep -ls "fuse.squashfuse_ll" /proc/[0-9]*/mountinfo 2>/dev/null | sed 's|^/proc/\([0-9]*\)/.*|\1 holds a squashfuse_ll mount|'
    return 0
}
nothing_left() {  # WHAT
    local left
    for _ in $(seq 1 50); do
        left=$(apptainer_left)
        [ -z "$left" ] && { pass "$1: nothing of Apptainer's runs or is mounted"; return; }
        sleep 0.2
    done
    fail "$1: left behind: $left"
    echo "$left" | awk '{ print $1 }' | xargs -r kill -9 2>/dev/null
}

# 1. Four tasks on n1 and n2 in the image, with a read-only mount; the .sif has no Env, so the
# job's environment is the tasks' (with trellis's and Slurm's variables); the job's folder is
# not in the image, so the tasks start in / and the first says so.
as_user_srun inside -N2 -n4 --ntasks-per-node=2 "${image[@]}" --trellis-mounts="$dir/shared:/shared:ro" \
    --export=ALL,TRELLIS_TEST_FROM_JOB=kept sh -c \
    'echo "$SLURMD_NODENAME local=$TRELLIS_LOCAL_RANK $(cat /trellis-image-marker) $(cat /shared/note) job=$TRELLIS_TEST_FROM_JOB uid=$(id -u) pwd=$(pwd) $(touch /shared/w 2>/dev/null && echo WROTE)"'
rc=$?
cat "$dir/inside.out"
[ $rc -eq 0 ] || fail "srun in the .sif: status $rc: $(tail -n 5 "$dir/inside.err")"
[ "$(grep -c "inside a trellis test image from the host job=kept uid=$uid pwd=/ $" "$dir/inside.out")" -eq 4 ] &&
    [ "$(grep -c '^n1 local=' "$dir/inside.out")" -eq 2 ] && [ "$(grep -c '^n2 local=' "$dir/inside.out")" -eq 2 ] &&
    pass "4 tasks on n1 and n2 in the .sif as $job_user: the read-only mount, the job's environment, started in /" ||
    fail "tasks in the .sif: $(cat "$dir/inside.out" "$dir/inside.err")"
[ "$(grep -c "the working directory $dir/user is not in the image .*: tasks start in /" "$dir/inside.err")" -eq 1 ] &&
    pass "the working-directory rule: tasks that start in / are told so, once per step" ||
    fail "no word on the working directory: $(cat "$dir/inside.err")"
nothing_left "after a step on two nodes"

# The job's folder mounted at its own path: the tasks start there.
as_user_srun cwd -N1 -n1 -w n1 "${image[@]}" --trellis-mounts="$dir/user:$dir/user" sh -c 'pwd; touch ./from-sif && echo wrote'
grep -qx "$dir/user" "$dir/cwd.out" && grep -qx wrote "$dir/cwd.out" &&
    [ "$(stat -c %u "$dir/user/from-sif" 2>/dev/null)" = "$uid" ] &&
    pass "the working-directory rule: the job's folder, mounted at its own path, is where the task starts (and writes as $job_user)" ||
    fail "working directory under a mount: $(cat "$dir/cwd.out" "$dir/cwd.err")"

# 2. PMIx from inside the image across both nodes.
as_user_srun pmix -N2 -n4 --mpi=pmix "${image[@]}" /usr/local/bin/pmix_exchange
[ "$(grep -c 'sees: rank 0 on n1; rank 1 on n1; rank 2 on n2; rank 3 on n2' "$dir/pmix.out")" -eq 4 ] &&
    pass "PMIx exchange across n1 and n2 from inside the .sif" ||
    fail "pmix in the .sif: $(tail -n 5 "$dir/pmix.out" "$dir/pmix.err")"

# 3. A GPU step: its GPUs as its cgroup numbers them, and those GPUs' device files bound into
# Apptainer's container (1.4 has no CDI: trellis binds the nodes).
as_user_srun gpus -N1 -w n2 -n2 --gres=gpu:2 "${image[@]}" sh -c \
    'echo "$SLURMD_NODENAME local=$TRELLIS_LOCAL_RANK gpus=$CUDA_VISIBLE_DEVICES devices=$(ls /dev | grep "^nvidia[0-9]" | tr "\n" " ")"'
cat "$dir/gpus.out"
grep -q "^n2 local=0 gpus=0 devices=nvidia0 nvidia1 $" "$dir/gpus.out" &&
    grep -q "^n2 local=1 gpus=1 devices=nvidia0 nvidia1 $" "$dir/gpus.out" &&
    pass "a GPU step in the .sif: its GPUs as its cgroup numbers them, their device files bound in" ||
    fail "GPU step in the .sif: $(cat "$dir/gpus.out" "$dir/gpus.err")"
nothing_left "after the PMIx and GPU steps"

# 4. Refused before anything starts: Apptainer is never run for them.
refused() {  # NAME EXPECTED SRUN-ARGS...
    local name=$1 expected=$2 rc
    shift 2
    as_user_srun "$name" -N2 -n2 "$@" sh -c 'echo STARTED'
    rc=$?
    if [ $rc -ne 0 ] && ! grep -q STARTED "$dir/$name.out" && grep -q -- "$expected" "$dir/$name.err"; then
        pass "$name: refused: $(grep -m1 -- "$expected" "$dir/$name.err")"
    else
        fail "$name: status $rc, output $(cat "$dir/$name.out"), errors $(cat "$dir/$name.err")"
    fi
}
refused sif_not_allowed "is not allowed on this cluster" --trellis-image="$dir/other/x.sif"
refused sif_users_own "must belong to root" --trellis-image="$dir/users-own.sif"
refused sif_mount_not_allowed "is not under an allowed prefix" "${image[@]}" --trellis-mounts=/etc:/host-etc
# Apptainer's own refusal (a file that is no image) reaches the user, and the task never runs.
as_user_srun sif_refused -N1 -n1 -w n1 --trellis-image="$dir/not-an-image.sif" sh -c 'echo STARTED'
rc=$?
[ $rc -ne 0 ] && ! grep -q STARTED "$dir/sif_refused.out" && grep -q "$apptainer stopped before the container ran" "$dir/sif_refused.err" &&
    pass "Apptainer's refusal reaches the user: $(grep -m1 "stopped before" "$dir/sif_refused.err")" ||
    fail "a file that is no image: status $rc, $(cat "$dir/sif_refused.out" "$dir/sif_refused.err")"
nothing_left "after the refusals"

# 5. scancel of a running .sif step: Apptainer and its helper end with it.
as_user srun -N2 -n2 --job-name=sif-scancel "${image[@]}" sleep 300 >/dev/null 2>&1 &
srun_pid=$!
for _ in $(seq 1 150); do [ "$(apptainer_left | grep -c "in the image: [^ ]*sleep 300")" -ge 2 ] && break; sleep 0.2; done
running=$(apptainer_left)
[ "$(echo "$running" | grep -c "in the image: [^ ]*sleep 300")" -eq 2 ] && echo "$running" | grep -q "squashfuse_ll -f" &&
    pass "while a .sif step runs: its tasks in the image, Apptainer's squashfuse_ll beside them" ||
    fail "scancel: the step's tasks and Apptainer were not seen running: $running"
scancel --name=sif-scancel
wait $srun_pid 2>/dev/null
nothing_left "after scancel"

# 6. trellis-agent launch --image x.sif, outside Slurm: both ranks in the image, then nothing left.
as_user "$build/trellis-agent" launch --nproc-per-node 2 --image "$dir/x.sif" --mounts "$dir/shared:/shared:ro" \
    --config "$dir/trellis.toml" -- sh -c 'echo "$(cat /trellis-image-marker) $(cat /shared/note) uid=$(id -u)"' \
    >"$dir/launch.out" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c "inside a trellis test image from the host uid=$uid$" "$dir/launch.out")" -eq 2 ] &&
    pass "trellis-agent launch --image x.sif: both ranks in the image, with the mount" ||
    fail "agent launch: status $rc, $(cat "$dir/launch.out")"
nothing_left "after trellis-agent launch"
as_user "$build/trellis-agent" launch --nproc-per-node 1 --image "$dir/not-an-image.sif" \
    --config "$dir/trellis.toml" -- true >"$dir/launch-refused.out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "stopped before the container ran" "$dir/launch-refused.out" &&
    pass "trellis-agent launch: Apptainer's refusal reaches the user (status $rc)" ||
    fail "agent launch, refused: status $rc, $(cat "$dir/launch-refused.out")"
nothing_left "after a refused trellis-agent launch"

echo "apptainer tests ($version): $failures failures"
[ "$failures" -eq 0 ]
