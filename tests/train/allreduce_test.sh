#!/bin/bash
# Data-parallel trellis-train on this machine with the plain-environment wireup:
#  - allreduce with 2 ranks equals 1 rank with the doubled batch: the mean relative
#    difference of the first 5 losses is under 2.5% (batch-norm statistics are per rank, as
#    in Horovod and PyTorch DDP, the only difference); a control run with half the data per
#    step differs by more than that, so the comparison can tell;
#  - bfloat16 gradients on the wire change the losses by less than 1%;
#  - the ring and halving-doubling schedules give the same losses, and so do TCP and shared
#    memory; an asynchronous parameter server works over shared memory; halving-doubling with
#    3 ranks is refused, naming why.
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
common=(--model resnet8 --image-size 32 --data "$work/data/folder" --steps 5 --lr 0.05 --deterministic
        --threads 1 --data-threads 1 --display-every 5)
tolerance=0.025

"$TRAIN" "${common[@]}" --batch-size 32 --log-dir "$work/one" >"$work/one.out" 2>&1 || { cat "$work/one.out"; fail "1 rank"; }
"$TRAIN" "${common[@]}" --batch-size 16 --log-dir "$work/half" >/dev/null 2>&1 || fail "control run"
launch_ranks 2 "$work/two.out" "$TRAIN" "${common[@]}" --batch-size 16 --log-dir "$work/two"
wait_ranks "$work/two.out" "the 2-rank run"
fields=$(run_fields "$work/two/metrics.jsonl" strategy transport ranks allreduce_algorithm compression)
[ "$fields" = "allreduce tcp 2 halving-doubling none" ] ||
    fail "the run record says '$fields', not the allreduce over tcp on 2 ranks by the default schedule"
grep -qE "comm [0-9.]+ ms .* busbw [0-9.]+ GB/s" "$work/two.out.0" || fail "no communication figures in the progress lines"
same=$(mean_relative_difference "$work/one/metrics.jsonl" "$work/two/metrics.jsonl" 5)
control=$(mean_relative_difference "$work/one/metrics.jsonl" "$work/half/metrics.jsonl" 5)
echo "2 ranks x 16 against 1 rank x 32: mean relative loss difference $same; control (1 x 16): $control"
"$PYTHON3" -c "import sys; sys.exit(0 if $same < $tolerance < $control else 1)" ||
    fail "2-rank allreduce differs by $same (tolerance $tolerance, control $control)"
pass "2-rank allreduce matches the doubled batch within $tolerance ($same; control $control)"

# bfloat16 gradients on the wire: the same training to within bfloat16's rounding.
launch_ranks 2 "$work/bf16.out" "$TRAIN" "${common[@]}" --batch-size 16 --compress bf16 --log-dir "$work/bf16"
wait_ranks "$work/bf16.out" "the bf16 run"
[ "$(run_fields "$work/bf16/metrics.jsonl" compression)" = bf16 ] || fail "the run record does not name bf16 on the wire"
bf16_difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/bf16/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $bf16_difference < 0.01 else 1)" ||
    fail "bf16 compression changes the losses by $bf16_difference"
pass "bf16 gradient compression: losses within 1% of float32 ($bf16_difference)"

# The ring schedule: with 2 ranks each sum is the same two numbers in either order, so the
# losses are the same to the bit.
launch_ranks 2 "$work/ring.out" "$TRAIN" "${common[@]}" --batch-size 16 --allreduce-algorithm ring --log-dir "$work/ring"
wait_ranks "$work/ring.out" "the ring run"
[ "$(run_fields "$work/ring/metrics.jsonl" allreduce_algorithm)" = ring ] ||
    fail "the ring run's record: $(run_fields "$work/ring/metrics.jsonl" allreduce_algorithm)"
ring_difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/ring/metrics.jsonl" 5)
[ "$ring_difference" = 0 ] || [ "$ring_difference" = 0.0 ] || fail "ring and halving-doubling differ by $ring_difference"
pass "ring and halving-doubling allreduce: the same losses"
# Shared memory between the ranks of this node: the same sums in the same order, so the same
# losses to the bit; and the parameter server reached through it, asynchronous (whichever
# worker's push comes first), ends its steps.
launch_ranks 2 "$work/shm.out" "$TRAIN" "${common[@]}" --batch-size 16 --transport shm --log-dir "$work/shm"
wait_ranks "$work/shm.out" "the shared memory run"
[ "$(run_fields "$work/shm/metrics.jsonl" transport)" = shm ] ||
    fail "the shared memory run's record: $(run_fields "$work/shm/metrics.jsonl" transport)"
shm_difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/shm/metrics.jsonl" 5)
[ "$shm_difference" = 0 ] || [ "$shm_difference" = 0.0 ] || fail "shared memory and TCP differ by $shm_difference"
pass "allreduce over shared memory: the same losses as over TCP"
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
