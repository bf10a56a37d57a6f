#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# trellis-agent launch without Slurm: a 2-rank allreduce training natively and in an OCI
# container (made by an unprivileged user, as the plugin makes a step's), output prefixed by
# rank; kill -9 of one rank stops the other and the launcher exits with that rank's status;
# SIGTERM reaches the ranks, which stop cleanly with the trainer's stopped-early status (75);
# a PyTorch DDP script under launch as under torchrun;
# a .sif image through the Apptainer TEST DOUBLE (apptainer-test-double: Apptainer is not a
# Debian package), whose arguments and environment are checked, joined through the process
# the agent started even with a forged instance record in the user's home; bad options and a
# container launch as root are refused with a reason.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${TRELLIS_BUILD:?}
# The ranks it launches are trellis-train's.
[ -x "$build/trellis-train" ] || { echo "SKIP: trellis-train is not built (configure --without-trainer)"; exit 77; }
agent=$build/trellis-agent train=$build/trellis-train
work=$(mktemp -d /tmp/trellis-launch-test.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
short=(--model resnet8 --image-size 32 --batch-size 8 --steps 4 --threads 1 --display-every 2)
long=(--model resnet8 --image-size 32 --batch-size 8 --steps 100000 --threads 1 --display-every 1)
# Containers need an image only root can make (root's and unchangeable by users), run as an
# unprivileged user, and user namespaces.
can_contain=1
{ [ "$(id -u)" -eq 0 ] && [ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ]; } || can_contain=0
runner=trellistest
if [ $can_contain -eq 1 ]; then
    id "$runner" >/dev/null 2>&1 || useradd -M -s /bin/sh "$runner" || can_contain=0
    "$here/make_bundle" "$work/bundle" "$train" >/dev/null || exit $?
fi
# as_runner CMD...: CMD as that user, in this process (no fork: $! is the agent itself).
as_runner() { setpriv --reuid="$runner" --regid="$runner" --init-groups "$@"; }
touch "$work/image.sif"
mkdir -p "$work/double" "$work/bin" "$work/results"
ln -s "$here/apptainer-test-double" "$work/bin/apptainer"
. "$here/apptainer_double_left.sh"
cat >"$work/trellis.toml" <<TOML
[container]
allowed_images = ["$work/bundle", "$work/*.sif"]
allowed_mounts = ["$work"]
apptainer = "$work/bin/apptainer"
TOML
config=(--config "$work/trellis.toml")

# start_launch NAME [as_runner] AGENT-ARGS...: runs the agent in the background, output in NAME.out
start_launch() {
    local name=$1 who=()
    shift
    [ "$1" = as_runner ] && { who=(setpriv --reuid="$runner" --regid="$runner" --init-groups); shift; }
    "${who[@]}" "$agent" launch "$@" >"$work/$name.out" 2>&1 &
    launcher=$!
}
# rank_pids: the launcher's children (the ranks)
wait_running() {  # NAME: until rank 0 has done 3 steps
    for _ in $(seq 1 300); do grep -q "^\[0\] 3	" "$work/$1.out" && return 0; sleep 0.1; done
    cat "$work/$1.out"
    return 1
}

check_training() {  # NAME WHERE
    grep -q "^\[0\] Strategy: *allreduce over shm, 2 ranks (auto: no RDMA device with an active port; wireup env" "$work/$1.out" &&
        grep -q "^\[0\] total images/sec" "$work/$1.out" &&
        pass "2-rank training $2 through trellis-agent launch" || { cat "$work/$1.out"; fail "training $2"; }
}

"$agent" launch --nproc-per-node 2 -- "$train" "${short[@]}" >"$work/native.out" 2>&1 ||
    fail "native launch: status $?"
check_training native natively

kill_one_rank() {  # NAME WHERE AGENT-ARGS...
    local name=$1 where=$2
    shift 2
    start_launch "$name" "$@"
    wait_running "$name" || { fail "$where: the ranks did not get going"; kill $launcher; return; }
    local ranks
    ranks=$(pgrep -P $launcher | tr '\n' ' ')
    set -- $ranks
    [ $# -eq 2 ] || { fail "$where: expected 2 rank processes, found: $ranks"; kill $launcher; return; }
    kill -9 "$2"
    local status=0
    timeout 20 tail --pid=$launcher -f /dev/null || fail "$where: the launcher still runs 20 s after a rank was killed"
    wait $launcher || status=$?
    [ $status -eq 137 ] && ! kill -0 "$1" 2>/dev/null && grep -q "exited with status 137: stopping the other ranks" "$work/$name.out" &&
        pass "$where: kill -9 of one rank stops the other; the launcher exits 137" ||
        { tail -n 5 "$work/$name.out"; fail "$where: launcher status $status after kill -9 of a rank"; }
}
kill_one_rank kill-native natively --nproc-per-node 2 -- "$train" "${long[@]}"

# SIGTERM to the launcher reaches the ranks: trellis-train stops at the end of its step.
start_launch term --nproc-per-node 2 -- "$train" "${long[@]}"
if wait_running term; then
    kill -TERM $launcher
    status=0
    timeout 20 tail --pid=$launcher -f /dev/null
    wait $launcher || status=$?
    [ $status -eq 75 ] && [ "$(grep -c "received signal 15" "$work/term.out")" -ge 1 ] &&
        pass "SIGTERM is passed on: the ranks stopped cleanly, stopped early (status 75)" ||
        { tail -n 5 "$work/term.out"; fail "SIGTERM: launcher status $status"; }
else
    fail "SIGTERM: the ranks did not get going"
fi

if [ $can_contain -eq 1 ]; then
    chown "$runner" "$work/results" "$work/double"
    as_runner "$agent" launch --nproc-per-node 2 --image "$work/bundle" --mounts "$work:/work:ro" "${config[@]}" -- \
        sh -c "cat /trellis-image-marker; ls /work/trellis.toml; id -u; exec /usr/local/bin/trellis-train ${short[*]}" >"$work/oci.out" 2>&1 ||
        fail "launch in the container: status $?"
    check_training oci "in an OCI container"
    # The ranks on a node share the step's container, its /dev/shm with it: the shared memory
    # transport works between them.
    as_runner "$agent" launch --nproc-per-node 2 --image "$work/bundle" "${config[@]}" -- \
        /usr/local/bin/trellis-train "${short[@]}" --transport shm >"$work/oci-shm.out" 2>&1 ||
        fail "launch in the container over shared memory: status $?"
    grep -q "^\[0\] Strategy: *allreduce over shm, 2 ranks" "$work/oci-shm.out" && grep -q "^\[0\] total images/sec" "$work/oci-shm.out" &&
        pass "2 ranks in containers of their own train over shared memory" ||
        { tail -n 5 "$work/oci-shm.out"; fail "2 ranks in containers over shared memory"; }
    [ "$(grep -c "inside a trellis test image" "$work/oci.out")" -eq 2 ] && grep -q "^\[1\] /work/trellis.toml" "$work/oci.out" &&
        grep -q "^\[0\] $(id -u "$runner")$" "$work/oci.out" &&
        pass "both ranks ran in the image as $runner and see the mount" || fail "the ranks did not run in the image"
    kill_one_rank kill-oci "in the container" as_runner --nproc-per-node 2 --image "$work/bundle" "${config[@]}" -- \
        /usr/local/bin/trellis-train "${long[@]}"
    out=$("$agent" launch --nproc-per-node 1 --image "$work/bundle" "${config[@]}" -- true 2>&1)
    echo "$out" | grep -q "root's are not given to a container" && pass "a container launch as root is refused: $out" ||
        fail "root container launch: $out"

    # A .sif image through the Apptainer TEST DOUBLE, with a forged instance record in the
    # user's home naming a process of theirs outside any image: the agent never reads it.
    home=$(getent passwd "$runner" | cut -d: -f6)
    forged_home=$work/home
    mkdir -p "$forged_home/.apptainer/instances/app/$(hostname)/$runner/trellis"
    as_runner sleep 60 &
    decoy=$!
    echo "{\"pid\": $decoy, \"image\": \"$work/image.sif\"}" \
        >"$forged_home/.apptainer/instances/app/$(hostname)/$runner/trellis/trellis.json"
    [ -d "$home" ] || usermod -d "$forged_home" "$runner" 2>/dev/null
    rm -f "$work/double/pids"
    as_runner "$agent" launch --nproc-per-node 2 --image "$work/image.sif" --mounts "$work/results:/tmp/results:ro" \
        "${config[@]}" -- sh -c 'cat /mnt/trellis-sif-marker; ls -d /tmp/results' >"$work/sif.out" 2>&1 ||
        fail "sif launch through the test double: status $?"
    kill $decoy 2>/dev/null
    # Nothing of Apptainer's outlives the launch: not the helper the double leaves in a process
    # group of its own, as Apptainer leaves squashfuse_ll.
    left=$(apptainer_double_left "$work/double") || fail "the Apptainer test double recorded no process"
    [ -z "$left" ] && pass "nothing of Apptainer's session outlives the launch ($(wc -l <"$work/double/pids") start)" ||
        { as_runner kill -9 $left; fail "Apptainer's processes outlived the launch: pids $left"; }
    [ "$(grep -c "inside the sif test double" "$work/sif.out")" -eq 2 ] && grep -q "^\[1\] /tmp/results$" "$work/sif.out" &&
        pass "both ranks joined the container of the Apptainer the agent started, with the mount" ||
        { cat "$work/sif.out"; fail "sif ranks"; }
    calls=$(cat "$work/double/calls")
    echo "$calls" | grep -qxF "exec --userns --contain --no-home --cleanenv --bind $build/trellis-pause:/tmp/.trellis-pause:ro --bind $work/results:/tmp/results:ro $work/image.sif /tmp/.trellis-pause" &&
        ! echo "$calls" | grep -q "^instance" &&
        pass "Apptainer's command line as expected, no instance command (checked by the test double)" ||
        fail "apptainer calls: $calls"
    names=$(tr ' ' '\n' <"$work/double/env-names" | sort -u | grep -vxE "PATH|HOME|USER|LOGNAME|PWD|SHLVL|_|" | tr '\n' ' ')
    [ -z "$names" ] && pass "Apptainer gets PATH, HOME, USER and LOGNAME only" || fail "Apptainer's environment also had: $names"
    rm -f "$work/double/pids"
    out=$(as_runner "$agent" launch --nproc-per-node 1 --image "$work/image.sif" --mounts "$work/results:/nowhere" \
        "${config[@]}" -- true 2>&1)
    echo "$out" | grep -q "cannot create /nowhere" && pass "Apptainer's refusal reaches the user: $(echo "$out" | tail -n 1)" ||
        fail "apptainer failure: $out"
    left=$(apptainer_double_left "$work/double") || fail "the Apptainer test double recorded no process"
    [ -z "$left" ] && pass "nothing of Apptainer's session outlives its refusal" ||
        { as_runner kill -9 $left; fail "Apptainer's processes outlived its refusal: pids $left"; }
else
    echo "SKIP (part): the container cases need root (to make a root-owned image and a user) and user namespaces"
fi

# A PyTorch DDP script (init_method='env://') runs under launch unchanged: the agent sets
# torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT...).
python=${PYTHON3:-python3}
if "$python" -c 'import torch.distributed' 2>/dev/null; then
    "$agent" launch --nproc-per-node 2 -- "$python" "$here/../slurm/frameworks/ddp_train.py" >"$work/ddp.out" 2>&1
    if "$python" - "$work/ddp.out" <<'PY'; then
import json, sys
ranks = [json.loads(l.split("] ", 1)[1]) for l in open(sys.argv[1]) if "{" in l]
sys.exit(0 if sorted(r["rank"] for r in ranks) == [0, 1] and len({r["digest"] for r in ranks}) == 1 else 1)
PY
        pass "a PyTorch DDP script under trellis-agent launch: 2 ranks joined, identical parameters"
    else
        fail "DDP under launch: $(cat "$work/ddp.out")"
    fi
else
    echo "SKIP (in this test): PyTorch is not installed (apt-get install python3-torch)"
fi

# trellis-agent check: this machine's facts as JSON; an expectation it cannot meet fails.
"$agent" check --json >"$work/check.json" || fail "check on this machine: status $? ($(cat "$work/check.json"))"
python3 -c "import json,sys; f=json.load(open(sys.argv[1])); assert f['healthy'] and f['cpus'] >= 1 and 'runtimes' in f" \
    "$work/check.json" && pass "check --json: $(cut -c1-120 "$work/check.json")..." || fail "check --json: $(cat "$work/check.json")"
out=$("$agent" check --expect-gpus 1 2>&1); status=$?
[ $status -eq 1 ] && echo "$out" | grep -q "PROBLEM: expected at least 1 GPUs, found 0" &&
    pass "check --expect-gpus 1 on a machine without GPUs exits 1 naming it" || fail "check --expect-gpus: $status $out"

# Bad input: a clear message, status 2, nothing started.
out=$("$agent" launch -- true 2>&1); status=$?
[ $status -eq 2 ] && echo "$out" | grep -q "nproc-per-node is required" && pass "missing --nproc-per-node: $out" || fail "no nproc: $status $out"
out=$("$agent" launch --nproc-per-node two -- true 2>&1); status=$?
[ $status -eq 2 ] && echo "$out" | grep -q "invalid value .* for --nproc-per-node (accepted: a whole number from 1 to 4096)" && pass "bad --nproc-per-node: $out" || fail "bad nproc: $status $out"
out=$(as_runner "$agent" launch --nproc-per-node 1 --image "$work/nothing" "${config[@]}" -- true 2>&1); status=$?
[ $status -eq 3 ] && echo "$out" | grep -q "does not exist" && pass "missing image: $out" || fail "missing image: $status $out"

echo "launch tests: $failures failures"
[ "$failures" -eq 0 ]
