#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Gradient accumulation: --accumulate 2 with batches of 16 learns as batches of 32 do, on one
# rank and with two ranks of 8 (where the allreduce overlaps the last part's backward pass).
# Batch norm normalises each batch of 16 on its own, as with two ranks, so the losses match
# within the tolerance of tests/train/allreduce_test.sh; a control run with batches of 16 and
# no accumulation differs by more.
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
common=(--model resnet8 --image-size 32 --data "$work/data/folder" --steps 5 --lr 0.05 --deterministic
        --threads 1 --data-threads 1 --display-every 5)
tolerance=0.025

"$TRAIN" "${common[@]}" --batch-size 32 --log-dir "$work/whole" >/dev/null 2>&1 || fail "batches of 32"
"$TRAIN" "${common[@]}" --batch-size 16 --log-dir "$work/half" >/dev/null 2>&1 || fail "control run"
"$TRAIN" "${common[@]}" --batch-size 16 --accumulate 2 --log-dir "$work/added" >"$work/added.out" 2>&1 ||
    { cat "$work/added.out"; fail "--accumulate 2"; }
grep -q "Batch size:  32 global, 32 per worker, 1 worker (2 batches of 16 added per step)" "$work/added.out" ||
    fail "the header does not say how the batch is made: $(grep 'Batch size' "$work/added.out")"
[ "$(run_fields "$work/added/metrics.jsonl" global_batch accumulate)" = "32 2" ] ||
    fail "the run record says $(run_fields "$work/added/metrics.jsonl" global_batch accumulate)"
added=$(mean_relative_difference "$work/whole/metrics.jsonl" "$work/added/metrics.jsonl" 5)
control=$(mean_relative_difference "$work/whole/metrics.jsonl" "$work/half/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $added < $tolerance < $control else 1)" ||
    fail "--accumulate 2 x 16 differs from batches of 32 by $added (tolerance $tolerance, control $control)"
pass "--accumulate 2 x 16 learns as batches of 32: $added (control 1 x 16: $control)"

launch_ranks 2 "$work/two.out" "$TRAIN" "${common[@]}" --batch-size 8 --accumulate 2 --log-dir "$work/two"
wait_ranks "$work/two.out" "2 ranks with --accumulate 2"
# The control: the same 2 ranks of 8 without accumulation (a global batch of 16).
launch_ranks 2 "$work/two-control.out" "$TRAIN" "${common[@]}" --batch-size 8 --log-dir "$work/two-control"
wait_ranks "$work/two-control.out" "2 ranks without accumulation"
two=$(mean_relative_difference "$work/whole/metrics.jsonl" "$work/two/metrics.jsonl" 5)
two_control=$(mean_relative_difference "$work/whole/metrics.jsonl" "$work/two-control/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $two < $tolerance < $two_control else 1)" ||
    fail "2 ranks x 8 x 2 differ from batches of 32 by $two (tolerance $tolerance, control 2 x 8: $two_control)"
pass "2 ranks x --accumulate 2 x 8 learn as batches of 32: $two (control 2 x 8: $two_control)"

# Resuming with another --accumulate (the same global batch): the checkpoint's position counts
# batches of 32, this run's batches of 16, so 3 steps in it continues at batch 6, and after
# 2 more steps of 2 batches each its own checkpoint says batch 10.
"$TRAIN" "${common[@]}" --batch-size 32 --steps 3 --checkpoint-dir "$work/carried" >/dev/null 2>&1 ||
    fail "3 steps of 32 with a checkpoint"
"$TRAIN" "${common[@]}" --batch-size 16 --accumulate 2 --checkpoint-dir "$work/carried" --resume \
    >"$work/carried.out" 2>&1 || { cat "$work/carried.out"; fail "resuming with --accumulate 2"; }
grep -q "the data continues at epoch 0, batch 6$" "$work/carried.out" ||
    fail "the position was not carried over: $(grep -i 'resumed\|continues' "$work/carried.out")"
"$TRAIN" "${common[@]}" --batch-size 16 --accumulate 2 --steps 5 --checkpoint-dir "$work/carried" --resume \
    >"$work/again.out" 2>&1 || { cat "$work/again.out"; fail "resuming again"; }
grep -q "at step 5 (epoch 0, batch 10)" "$work/again.out" && ! grep -q "continues at" "$work/again.out" ||
    fail "the resumed run's checkpoint: $(grep -i 'resumed\|continues' "$work/again.out")"
pass "a checkpoint of batches of 32 resumes with --accumulate 2 x 16 at the same sample (batch 6 of 16)"

# Epochs count batches over --accumulate exactly: 62 batches of 16 make 20.67 steps of 3.
"$TRAIN" "${common[@]}" --batch-size 16 --accumulate 3 --steps 1 >"$work/thirds.out" 2>&1 ||
    { cat "$work/thirds.out"; fail "--accumulate 3"; }
grep -q "1 steps (20.67 per epoch)" "$work/thirds.out" || fail "steps per epoch: $(grep Optimizer "$work/thirds.out")"
pass "62 batches of 16 per epoch are 20.67 steps of --accumulate 3"
