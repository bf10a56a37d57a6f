#!/bin/bash
# Distributed trellis-train on this machine with the plain-environment wireup:
#  - allreduce with 2 ranks equals 1 rank with the doubled batch: the mean relative
#    difference of the first 5 losses is under 2.5% (batch-norm statistics are per rank, as
#    in Horovod and PyTorch DDP, the only difference); a control run with half the data per
#    step differs by more than that, so the comparison can tell;
#  - the ring and halving-doubling schedules give the same losses; halving-doubling with 3
#    ranks is refused, naming why;
#  - the synchronous parameter server equals the allreduce, and resumes from its checkpoints
#    (the servers' shards beside rank 0's) to the same losses; the asynchronous one learns;
#  - kill -9 of one of 3 ranks mid-run: the others exit non-zero within 10 s naming it;
#  - a frozen rank (SIGSTOP) is given up after --comm-timeout, naming it;
#  - trellis-bench allreduce checks its sums on 3 ranks; p2p runs between 2.
. "$(dirname "$0")/lib.sh"
BENCH="$TRELLIS_BUILD/trellis-bench"
make_learnable_dataset "$work/data"
common=(--model resnet8 --image-size 32 --data "$work/data/folder" --steps 5 --lr 0.05 --deterministic
        --threads 1 --data-threads 1 --display-every 5)
tolerance=0.025

"$TRAIN" "${common[@]}" --batch-size 32 --log-dir "$work/one" >"$work/one.out" 2>&1 || { cat "$work/one.out"; fail "1 rank"; }
"$TRAIN" "${common[@]}" --batch-size 16 --log-dir "$work/half" >/dev/null 2>&1 || fail "control run"
launch_ranks 2 29811 "$work/two.out" "$TRAIN" "${common[@]}" --batch-size 16 --log-dir "$work/two"
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/two.out.*; fail "a rank of the 2-rank run failed"; }; done
grep -q "Strategy: *allreduce over tcp, 2 ranks.* reduced by halving-doubling" "$work/two.out.0" ||
    { cat "$work/two.out.0"; fail "no allreduce strategy line naming the default schedule"; }
grep -qE "comm [0-9.]+ ms .* busbw [0-9.]+ GB/s" "$work/two.out.0" || fail "no communication figures in the progress lines"
same=$(mean_relative_difference "$work/one/metrics.jsonl" "$work/two/metrics.jsonl" 5)
control=$(mean_relative_difference "$work/one/metrics.jsonl" "$work/half/metrics.jsonl" 5)
echo "2 ranks x 16 against 1 rank x 32: mean relative loss difference $same; control (1 x 16): $control"
"$PYTHON3" -c "import sys; sys.exit(0 if $same < $tolerance < $control else 1)" ||
    fail "2-rank allreduce differs by $same (tolerance $tolerance, control $control)"
pass "2-rank allreduce matches the doubled batch within $tolerance ($same; control $control)"

# bfloat16 gradients on the wire: the same training to within bfloat16's rounding.
launch_ranks 2 29818 "$work/bf16.out" "$TRAIN" "${common[@]}" --batch-size 16 --compress bf16 --log-dir "$work/bf16"
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/bf16.out.*; fail "a rank of the bf16 run failed"; }; done
grep -q "bf16 on the wire" "$work/bf16.out.0" || fail "no compression in the strategy line"
bf16_difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/bf16/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $bf16_difference < 0.01 else 1)" ||
    fail "bf16 compression changes the losses by $bf16_difference"
pass "bf16 gradient compression: losses within 1% of float32 ($bf16_difference)"

# The ring schedule: with 2 ranks each sum is the same two numbers in either order, so the
# losses are the same to the bit.
launch_ranks 2 29824 "$work/ring.out" "$TRAIN" "${common[@]}" --batch-size 16 --allreduce-algorithm ring --log-dir "$work/ring"
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/ring.out.*; fail "a rank of the ring run failed"; }; done
grep -q "reduced by ring" "$work/ring.out.0" || fail "the ring run's strategy line: $(grep Strategy "$work/ring.out.0")"
ring_difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/ring/metrics.jsonl" 5)
[ "$ring_difference" = 0 ] || [ "$ring_difference" = 0.0 ] || fail "ring and halving-doubling differ by $ring_difference"
pass "ring and halving-doubling allreduce: the same losses"
launch_ranks 3 29825 "$work/hd3.out" "$TRAIN" "${common[@]}" --batch-size 16 --allreduce-algorithm halving-doubling
refused=0
for pid in "${rank_pids[@]}"; do wait "$pid" || refused=$((refused + 1)); done
[ $refused -eq 3 ] && grep -q "power-of-two number of ranks, not 3" "$work/hd3.out.0" ||
    fail "halving-doubling on 3 ranks: $refused ranks refused; $(tail -n 2 "$work/hd3.out.0")"
pass "halving-doubling on 3 ranks is refused on every rank, naming why"

# Synchronous parameter server (2 workers, 1 server) against the 2-rank allreduce: the same
# average of the same gradients, applied by the server: the same losses to float rounding.
launch_ranks 3 29815 "$work/ps.out" "$TRAIN" "${common[@]}" --batch-size 16 --strategy ps --log-dir "$work/ps"
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/ps.out.*; fail "a rank of the PS run failed"; }; done
grep -q "Strategy: *ps (sync) over tcp, 3 ranks.*2 workers, 1 servers" "$work/ps.out.0" || { cat "$work/ps.out.0"; fail "no PS strategy line"; }
grep -q "parameter server 0 (rank 2" "$work/ps.out.2" || { cat "$work/ps.out.2"; fail "rank 2 did not serve"; }
ps_difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/ps/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $ps_difference < 1e-4 else 1)" ||
    fail "synchronous PS differs from the allreduce by $ps_difference"
pass "synchronous PS (2 workers + 1 server) equals the 2-rank allreduce ($ps_difference)"

# Synchronous PS with checkpoints: the servers save their shards (weights and optimizer
# state) beside rank 0's checkpoint; 3 steps, then --resume to 6, give the losses of 6 steps
# in one go.
ps_ckpt=("${common[@]}" --batch-size 16 --strategy ps --checkpoint-every 3)
launch_ranks 3 29821 "$work/psc-full.out" "$TRAIN" "${ps_ckpt[@]}" --steps 6 --checkpoint-dir "$work/psc-a" \
    --log-dir "$work/psc-full"
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/psc-full.out.*; fail "a rank of the checkpointed PS run failed"; }; done
ls "$work/psc-a/server-0/checkpoint-6.trellis" "$work/psc-a/checkpoint-6.trellis" >/dev/null ||
    { ls -R "$work/psc-a"; fail "no server or rank 0 checkpoint at step 6"; }
launch_ranks 3 29822 "$work/psc-first.out" "$TRAIN" "${ps_ckpt[@]}" --steps 3 --checkpoint-dir "$work/psc-b" \
    --log-dir "$work/psc-first"
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/psc-first.out.*; fail "the first half of the PS run failed"; }; done
launch_ranks 3 29823 "$work/psc-resumed.out" "$TRAIN" "${ps_ckpt[@]}" --steps 6 --checkpoint-dir "$work/psc-b" \
    --resume --log-dir "$work/psc-resumed"
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/psc-resumed.out.*; fail "the resumed PS run failed"; }; done
grep -q "parameter server 0: resumed its shard from step 3" "$work/psc-resumed.out.2" ||
    { cat "$work/psc-resumed.out.2"; fail "the server did not resume its shard"; }
"$PYTHON3" - "$work/psc-full/metrics.jsonl" "$work/psc-resumed/metrics.jsonl" <<'PY' ||
import json, sys
def losses(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if r["kind"] == "train" and "loss" in r}
full, resumed = losses(sys.argv[1]), losses(sys.argv[2])
print("steps 4-6, uninterrupted:", [full[s] for s in (4, 5, 6)], "resumed:", [resumed[s] for s in (4, 5, 6)])
sys.exit(0 if all(full[s] == resumed[s] for s in (4, 5, 6)) else 1)
PY
    fail "the resumed PS run's losses differ from the uninterrupted run's"
pass "synchronous PS checkpoints: servers save their shards, resuming at step 3 repeats steps 4-6 exactly"
out=$("$TRAIN" "${common[@]}" --strategy ps --ps-mode async --checkpoint-dir "$work/x" 2>&1) &&
    fail "async PS with --checkpoint-dir was accepted" || echo "$out" | grep -q "needs --ps-mode sync" ||
    fail "async PS with --checkpoint-dir: $out"

# Asynchronous parameter server, 2 workers and 2 servers, learns the generated dataset.
launch_ranks 4 29816 "$work/async.out" "$TRAIN" --model resnet8 --image-size 32 --data "$work/data/folder" \
    --batch-size 32 --steps 150 --lr 0.4 --threads 1 --display-every 50 --strategy ps --ps-servers 2 --ps-mode async
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/async.out.*; fail "a rank of the async PS run failed"; }; done
top1=$(sed -n 's/^Accuracy @ 1 = \([0-9.]*\).*/\1/p' "$work/async.out.0" | tail -n 1)
"$PYTHON3" -c "import sys; sys.exit(0 if ${top1:-0} >= 0.6 else 1)" || { cat "$work/async.out.0"; fail "async PS top-1 ${top1:-none} < 0.6"; }
pass "asynchronous PS (2 workers, 2 servers) reaches top-1 $top1 >= 0.6 in 150 steps per worker"

# kill -9 of rank 1 of 3
launch_ranks 3 29812 "$work/kill.out" "$TRAIN" --model resnet20 --batch-size 16 --steps 100000 --threads 1 \
    --display-every 1 --comm-timeout 60
for _ in $(seq 1 300); do grep -q "^3	" "$work/kill.out.0" 2>/dev/null && break; sleep 0.1; done
grep -q "^3	" "$work/kill.out.0" || { cat "$work"/kill.out.*; fail "the 3-rank run did not get going"; }
kill -KILL "${rank_pids[1]}"
killed_at=$(date +%s.%N)
for r in 0 2; do
    status=0
    timeout 15 tail --pid="${rank_pids[$r]}" -f /dev/null || fail "rank $r still running 15 s after the kill"
    wait "${rank_pids[$r]}" || status=$?
    [ $status -ne 0 ] || fail "rank $r exited 0 after rank 1 was killed"
    grep -q "rank 1 " "$work/kill.out.$r" || { cat "$work/kill.out.$r"; fail "rank $r does not name rank 1"; }
done
elapsed=$("$PYTHON3" -c "import time; print(round(time.time() - $killed_at, 1))")
"$PYTHON3" -c "import sys; sys.exit(0 if $elapsed < 10 else 1)" || fail "ranks took $elapsed s to stop (limit 10 s)"
echo "rank 0: $(grep stopping "$work/kill.out.0")"
pass "kill -9 of rank 1: ranks 0 and 2 stopped in $elapsed s naming it"

# A frozen rank (SIGSTOP: alive, but neither sending nor beating) is given up after
# --comm-timeout; a busy one is not (the heartbeat; tested in comm_test).
launch_ranks 2 29819 "$work/stop.out" "$TRAIN" --model resnet8 --image-size 32 --batch-size 8 --steps 100000 \
    --threads 1 --display-every 1 --comm-timeout 2
for _ in $(seq 1 300); do grep -q "^3	" "$work/stop.out.0" 2>/dev/null && break; sleep 0.1; done
grep -q "^3	" "$work/stop.out.0" || { cat "$work"/stop.out.*; fail "the 2-rank run did not get going"; }
kill -STOP "${rank_pids[1]}"
stopped_at=$(date +%s.%N)
status=0
timeout 15 tail --pid="${rank_pids[0]}" -f /dev/null || fail "rank 0 still running 15 s after rank 1 froze"
wait "${rank_pids[0]}" || status=$?
kill -KILL "${rank_pids[1]}"; kill -CONT "${rank_pids[1]}"; wait "${rank_pids[1]}" || true
[ $status -ne 0 ] || fail "rank 0 exited 0 after rank 1 froze"
grep -q "rank 1 .*heartbeat.*--comm-timeout" "$work/stop.out.0" || { cat "$work/stop.out.0"; fail "rank 0 does not name the frozen rank 1"; }
elapsed=$("$PYTHON3" -c "import time; print(round(time.time() - $stopped_at, 1))")
pass "a frozen rank 1 is given up after the 2 s --comm-timeout: rank 0 stopped in $elapsed s naming it"

launch_ranks 3 29813 "$work/bench.out" "$BENCH" allreduce --sizes 4K,1M,5M --iters 3
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/bench.out.*; fail "trellis-bench allreduce failed"; }; done
cat "$work/bench.out.0"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' "$work/bench.out.0")" -eq 3 ] || fail "allreduce table incomplete or wrong sums"
grep -qE '^# +\(B\) +\(elements\) .*\(us\) +\(GB/s\) +\(GB/s\)' "$work/bench.out.0" &&
    grep -qE '^# Avg bus bandwidth +: [0-9.]+' "$work/bench.out.0" || fail "allreduce table lacks nccl-tests' units row or average"
launch_ranks 2 29814 "$work/p2p.out" "$BENCH" p2p --sizes 8,64K,1M --iters 5 --json
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/p2p.out.*; fail "trellis-bench p2p failed"; }; done
[ "$(grep -c '"benchmark":"p2p"' "$work/p2p.out.0")" -eq 3 ] || { cat "$work/p2p.out.0"; fail "p2p JSON incomplete"; }
launch_ranks 3 29817 "$work/psb.out" "$BENCH" ps --sizes 64K,1M --iters 3 --json
for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$work"/psb.out.*; fail "trellis-bench ps failed"; }; done
[ "$(grep -c '"benchmark":"ps","transport":"tcp","workers":2,"servers":1' "$work/psb.out.0")" -eq 2 ] ||
    { cat "$work/psb.out.0"; fail "ps JSON incomplete"; }
pass "trellis-bench allreduce (3 ranks, sums checked), p2p and ps (JSON)"
