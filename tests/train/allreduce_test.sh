#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Data-parallel trellis-train on this machine with the plain-environment wireup:
#  - allreduce with 2 ranks equals 1 rank with the doubled batch: the mean relative
#    difference of the first 5 losses is under 2.5% (batch-norm statistics are per rank, as
#    in Horovod and PyTorch DDP, the only difference); a control run with half the data per
#    step differs by more than that, so the comparison can tell;
#  - the run records say what a report compares runs by (binding, nodes, ranks per node,
#    transport, schedule, batch, gradient bytes, peak memory);
#  - bfloat16 gradients on the wire change the losses by less than 1%, and are half the bytes;
#  - the ring and halving-doubling schedules give the same losses, and so do TCP and shared
#    memory; an asynchronous parameter server works over shared memory; halving-doubling with
#    3 ranks is refused, naming why.
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
common=(--model resnet8 --image-size 32 --data "$work/data/folder" --steps 5 --lr 0.05 --deterministic
        --threads 1 --data-threads 1 --display-every 5)
tolerance=0.025

# The 1-rank run is given a binding variable, as the plugin would set it: its run record names it.
TRELLIS_DISTANCE=PIX "$TRAIN" "${common[@]}" --batch-size 32 --log-dir "$work/one" >"$work/one.out" 2>&1 ||
    { cat "$work/one.out"; fail "1 rank"; }
"$TRAIN" "${common[@]}" --batch-size 16 --log-dir "$work/half" >/dev/null 2>&1 || fail "control run"
launch_ranks 2 "$work/two.out" "$TRAIN" "${common[@]}" --batch-size 16 --transport tcp --log-dir "$work/two"
wait_ranks "$work/two.out" "the 2-rank run"
fields=$(run_fields "$work/two/metrics.jsonl" strategy transport ranks allreduce_algorithm compression)
[ "$fields" = "allreduce tcp 2 halving-doubling none" ] ||
    fail "the run record says '$fields', not the allreduce over tcp on 2 ranks by the default schedule"
grep -qE "comm [0-9.]+ ms .* busbw [0-9.]+ GB/s" "$work/two.out.0" || fail "no communication figures in the progress lines"
# What a report compares runs by: where and how they ran (binding, hosts, ranks per node), the
# transport and schedule chosen, the per-rank batch, the gradients' bytes, and the peak memory.
"$PYTHON3" - "$work/one/metrics.jsonl" "$work/two/metrics.jsonl" <<'PY' || fail "the run records lack what a report needs"
import socket, sys
from trellis_studies.report.jsonl import records_of as records
def check(path, expected, binding):
    lines = records(path)
    run = next(r for r in lines if r["kind"] == "run")
    for field, value in expected.items():
        assert run.get(field) == value, (path, field, run.get(field), value)
    assert run["gradient_bytes"] == 4 * run["parameters"], run
    assert isinstance(run["hostname"], str) and run["hostname"], run
    for name, value in binding.items():
        assert run["binding"].get(name) == value, (path, name, run["binding"])
    # The meeting point is the run's, not its binding's.
    assert "TRELLIS_MASTER" not in run["binding"], run["binding"]
    assert "TRELLIS_SECRET" not in run["binding"], run["binding"]
    cpus = run["binding"]["cpus"]
    assert cpus and all(part.replace("-", "").isdigit() for part in cpus.split(",")), cpus
    last = [r for r in lines if r["kind"] == "train" and "total_images_per_sec" in r]
    assert len(last) == 1, last
    rss = last[0]["peak_rss_bytes"]
    # At least the weights and their gradients, and not more than this small model could hold.
    assert isinstance(rss, int) and 8 * run["parameters"] < rss < 4 << 30, rss
    assert all("peak_rss_bytes" not in r for r in lines if r["kind"] == "train" and "loss" in r)
    print(path, "peak RSS", rss, "binding", run["binding"])
check(sys.argv[1], {"nodes": 1, "ranks_per_node": 1, "transport": "", "algorithm": "", "batch_size": 32,
                    "precision": "fp32", "ps_servers": 0}, {"TRELLIS_DISTANCE": "PIX"})
check(sys.argv[2], {"nodes": 1, "ranks_per_node": 2, "transport": "tcp", "algorithm": "halving-doubling",
                    "batch_size": 16, "precision": "fp32", "ps_servers": 0}, {"TRELLIS_RANK": "0", "TRELLIS_WORLD_SIZE": "2"})
PY
pass "the run records: binding, nodes and ranks per node, transport, schedule, batch, gradient bytes, peak memory"
same=$(mean_relative_difference "$work/one/metrics.jsonl" "$work/two/metrics.jsonl" 5)
control=$(mean_relative_difference "$work/one/metrics.jsonl" "$work/half/metrics.jsonl" 5)
echo "2 ranks x 16 against 1 rank x 32: mean relative loss difference $same; control (1 x 16): $control"
"$PYTHON3" -c "import sys; sys.exit(0 if $same < $tolerance < $control else 1)" ||
    fail "2-rank allreduce differs by $same (tolerance $tolerance, control $control)"
pass "2-rank allreduce matches the doubled batch within $tolerance ($same; control $control)"

# bfloat16 gradients on the wire: the same training to within bfloat16's rounding. The
# transport is left to its default, auto: shared memory here, and the strategy line says why.
launch_ranks 2 "$work/bf16.out" "$TRAIN" "${common[@]}" --batch-size 16 --compress bf16 --log-dir "$work/bf16"
wait_ranks "$work/bf16.out" "the bf16 run"
grep -q "^Strategy: *allreduce over shm, 2 ranks (auto: no RDMA device with an active port; wireup env" "$work/bf16.out.0" ||
    { grep Strategy "$work/bf16.out.0"; fail "the default transport is not auto's shared memory, or its reason is not given"; }
[ "$(run_fields "$work/bf16/metrics.jsonl" compression)" = bf16 ] || fail "the run record does not name bf16 on the wire"
"$PYTHON3" -c 'import sys; sys.exit(int(sys.argv[1]) * 2 != int(sys.argv[2]))' $(run_fields "$work/bf16/metrics.jsonl" gradient_bytes) \
    $(run_fields "$work/two/metrics.jsonl" gradient_bytes) || fail "bf16 gradients are not half the bytes on the wire"
bf16_difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/bf16/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $bf16_difference < 0.01 else 1)" ||
    fail "bf16 compression changes the losses by $bf16_difference"
pass "bf16 gradient compression: losses within 1% of float32 ($bf16_difference)"

# same_losses NAME FIELD VALUE WHAT ARGS...: 2 ranks with ARGS record FIELD=VALUE and give the
# TCP run's losses to the bit.
same_losses() {
    local name=$1 field=$2 value=$3 what=$4 difference
    shift 4
    launch_ranks 2 "$work/$name.out" "$TRAIN" "${common[@]}" --batch-size 16 "$@" --log-dir "$work/$name"
    wait_ranks "$work/$name.out" "the $name run"
    [ "$(run_fields "$work/$name/metrics.jsonl" "$field")" = "$value" ] ||
        fail "the $name run's record: $(run_fields "$work/$name/metrics.jsonl" "$field")"
    difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/$name/metrics.jsonl" 5)
    [ "$difference" = 0 ] || [ "$difference" = 0.0 ] || fail "$what differ by $difference"
    pass "$what: the same losses"
}
# The ring schedule: with 2 ranks each sum is the same two numbers in either order. Shared
# memory between the ranks of this node: the same sums in the same order.
same_losses ring allreduce_algorithm ring "ring and halving-doubling allreduce" --allreduce-algorithm ring
same_losses shm transport shm "allreduce over shared memory and over TCP" --transport shm
# The parameter server reached through shared memory, asynchronous (whichever worker's push
# comes first), ends its steps.
launch_ranks 3 "$work/shm-ps.out" "$TRAIN" "${common[@]}" --batch-size 16 --transport shm --strategy ps --ps-mode async
wait_ranks "$work/shm-ps.out" "the asynchronous parameter server over shared memory"
grep -q "^total images/sec" "$work/shm-ps.out.0" || fail "the asynchronous parameter server over shared memory: $(tail -n 2 "$work/shm-ps.out.0")"
pass "asynchronous parameter server over shared memory: 2 workers and a server finished"

launch_ranks 3 "$work/hd3.out" "$TRAIN" "${common[@]}" --batch-size 16 --allreduce-algorithm halving-doubling
refused=0
for pid in "${rank_pids[@]}"; do wait "$pid" || refused=$((refused + 1)); done
[ $refused -eq 3 ] && grep -q "power-of-two number of ranks, not 3" "$work/hd3.out.0" ||
    fail "halving-doubling on 3 ranks: $refused ranks refused; $(tail -n 2 "$work/hd3.out.0")"
pass "halving-doubling on 3 ranks is refused on every rank, naming why"
