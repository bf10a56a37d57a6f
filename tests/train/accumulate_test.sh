#!/bin/bash
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
two=$(mean_relative_difference "$work/whole/metrics.jsonl" "$work/two/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $two < $tolerance else 1)" ||
    fail "2 ranks x 8 x 2 differ from batches of 32 by $two (tolerance $tolerance)"
pass "2 ranks x --accumulate 2 x 8 learn as batches of 32: $two"
