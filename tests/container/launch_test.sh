#!/bin/bash
# trellis-agent launch without Slurm: a 2-rank allreduce training natively and in an OCI
# container (runc, as root), output prefixed by rank; kill -9 of one rank stops the other and
# the launcher exits with that rank's status; SIGTERM reaches the ranks, which stop cleanly
# with the trainer's stopped-early status (75);
# a PyTorch DDP script under launch as under torchrun;
# a .sif image through the Singularity TEST DOUBLE (singularity-test-double: neither
# Singularity nor Apptainer is a Debian package), whose arguments are checked; bad options
# and a non-root OCI launch are refused with a reason.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${TRELLIS_BUILD:?}
agent=$build/trellis-agent train=$build/trellis-train
work=$(mktemp -d /tmp/trellis-launch-test.XXXXXX)
chmod 755 "$work"
trap 'runc list -q 2>/dev/null | grep "^trellis-launch-" | xargs -r -n1 runc delete -f; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
short=(--model resnet8 --image-size 32 --batch-size 8 --steps 4 --threads 1 --display-every 2)
long=(--model resnet8 --image-size 32 --batch-size 8 --steps 100000 --threads 1 --display-every 1)
can_contain=1
{ [ "$(id -u)" -eq 0 ] && command -v runc >/dev/null; } || can_contain=0

if [ $can_contain -eq 1 ]; then
    "$here/make_bundle" "$work/bundle" "$train" >/dev/null || exit $?
fi
touch "$work/image.sif"
cat >"$work/trellis.toml" <<TOML
[container]
allowed_images = ["$work/bundle", "$work/*.sif"]
allowed_mounts = ["$work"]
run_dir = "$work/containers"
TOML
config=(--config "$work/trellis.toml")

# launch_ranks NAME AGENT-ARGS...: runs the agent in the background, output in NAME.out
start_launch() {
    local name=$1
    shift
    "$agent" launch "$@" >"$work/$name.out" 2>&1 &
    launcher=$!
}
# rank_pids: the launcher's children (the ranks)
wait_running() {  # NAME: until rank 0 has done 3 steps
    for _ in $(seq 1 300); do grep -q "^\[0\] 3	" "$work/$1.out" && return 0; sleep 0.1; done
    cat "$work/$1.out"
    return 1
}

check_training() {  # NAME WHERE
    grep -q "^\[0\] Strategy: *allreduce over tcp, 2 ranks (wireup env" "$work/$1.out" &&
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
    "$agent" launch --nproc-per-node 2 --image "$work/bundle" --mounts "$work:/results" "${config[@]}" -- \
        sh -c "cat /trellis-image-marker; ls /results/trellis.toml; exec /usr/local/bin/trellis-train ${short[*]}" >"$work/oci.out" 2>&1 ||
        fail "launch in the container: status $?"
    check_training oci "in an OCI container"
    [ "$(grep -c "inside a trellis test image" "$work/oci.out")" -eq 2 ] && grep -q "^\[1\] /results/trellis.toml" "$work/oci.out" &&
        pass "both ranks ran in the image and see the mount" || fail "the ranks did not run in the image"
    kill_one_rank kill-oci "in the container" --nproc-per-node 2 --image "$work/bundle" "${config[@]}" -- \
        /usr/local/bin/trellis-train "${long[@]}"
    [ -z "$(runc list -q | grep "^trellis-launch-")" ] && [ -z "$(ls "$work/containers")" ] &&
        pass "no container left after the launches" || fail "containers left: $(runc list -q) $(ls "$work/containers")"
    out=$(runuser -u nobody -- "$agent" launch --nproc-per-node 1 --image "$work/bundle" "${config[@]}" -- true 2>&1)
    echo "$out" | grep -q "containers need root" && pass "a non-root container launch is refused: $out" ||
        fail "non-root OCI launch: $out"
else
    echo "SKIP (part): the OCI container cases need root and runc"
fi

# A .sif image through the Singularity TEST DOUBLE.
mkdir -p "$work/double" "$work/bin"
ln -s "$here/singularity-test-double" "$work/bin/singularity"
if [ "$(id -u)" -eq 0 ]; then
    DOUBLE_DIR=$work/double PATH=$work/bin:$PATH "$agent" launch --nproc-per-node 2 --image "$work/image.sif" \
        --mounts "$work:/results:ro" "${config[@]}" -- cat /mnt/trellis-sif-marker >"$work/sif.out" 2>&1 ||
        fail "sif launch through the test double: status $?"
    [ "$(grep -c "inside the sif test double" "$work/sif.out")" -eq 2 ] &&
        pass "both ranks joined the (test double's) instance" || { cat "$work/sif.out"; fail "sif ranks"; }
    calls=$(cat "$work/double/calls")
    echo "$calls" | grep -qE "^instance start --contain --no-home --bind $work:/results:ro $work/image.sif trellis-launch-" &&
        echo "$calls" | grep -q "^instance list --json trellis-launch-" && echo "$calls" | grep -q "^instance stop --force trellis-launch-" &&
        pass "the agent's singularity command lines are as expected (checked by the test double)" ||
        fail "singularity calls: $calls"
else
    echo "SKIP (part): the test double's instance needs root for its mount namespace"
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
[ $status -eq 2 ] && echo "$out" | grep -q "is not a number" && pass "bad --nproc-per-node: $out" || fail "bad nproc: $status $out"
out=$("$agent" launch --nproc-per-node 1 --image "$work/nothing" "${config[@]}" -- true 2>&1); status=$?
[ $status -eq 3 ] && echo "$out" | grep -q "does not exist" && pass "missing image: $out" || fail "missing image: $status $out"

echo "launch tests: $failures failures"
[ "$failures" -eq 0 ]
