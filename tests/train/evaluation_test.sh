#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Evaluation over uneven shards, with 2 ranks: 21 evaluation samples in batches of 10 give
# rank 0 two batches and rank 1 one. The run must finish (no rank left waiting in a vote the
# other never casts), count every sample once, and score what one process scores from its
# checkpoint: the batch-norm statistics are averaged over the ranks before the checkpoint and
# the evaluation, so both hold the same model.
. "$(dirname "$0")/lib.sh"
"$MAKE_DATASET" --out "$work/data" --classes 7 --train-per-class 40 --val-per-class 3 --size 32 --seed 5 \
    >/dev/null || fail "make_dataset failed"
common=(--model resnet8 --image-size 32 --data "$work/data/folder" --steps 6 --lr 0.05 --deterministic
        --threads 1 --data-threads 1 --display-every 6 --comm-timeout 20 --checkpoint-dir "$work/ckpt")

# eval_field METRICS.jsonl FIELD: the last evaluation record's field
eval_field() {
    "$PYTHON3" - "$1" "$2" <<'PY'
import sys
from trellis_studies.report.jsonl import records_of
records = records_of(sys.argv[1], "eval")
print(records[-1][sys.argv[2]] if records else "-")
PY
}

launch_ranks 2 "$work/two.out" "$TRAIN" "${common[@]}" --batch-size 10 --log-dir "$work/two"
wait_ranks "$work/two.out" "the 2-rank run with uneven evaluation shards"
examples=$(eval_field "$work/two/metrics.jsonl" examples)
[ "$examples" = 21 ] || [ "$examples" = 21.0 ] || fail "the evaluation counted $examples examples, not 21"
pass "uneven evaluation shards (2 batches and 1): the run finishes and counts all 21 examples"

# The same model, evaluated by one process from the 2-rank run's checkpoint (same global
# batch, nothing left to train).
"$TRAIN" "${common[@]}" --batch-size 20 --resume --log-dir "$work/one" >"$work/one.out" 2>&1 ||
    { cat "$work/one.out"; fail "evaluating the checkpoint in one process"; }
grep -q "resumed from .* at step 6" "$work/one.out" || { cat "$work/one.out"; fail "the checkpoint was not used"; }
grep -q "schedule changed" "$work/one.out" && fail "the same schedule was reported as changed: $(grep changed "$work/one.out")"
two=$(eval_field "$work/two/metrics.jsonl" top1)
one=$(eval_field "$work/one/metrics.jsonl" top1)
two_loss=$(eval_field "$work/two/metrics.jsonl" loss)
one_loss=$(eval_field "$work/one/metrics.jsonl" loss)
"$PYTHON3" -c "import sys; sys.exit(0 if $one == $two and abs($one_loss - $two_loss) <= 1e-4 * abs($one_loss) else 1)" ||
    fail "2 ranks scored top-1 $two (loss $two_loss), their checkpoint in one process $one (loss $one_loss)"
pass "2 ranks and their checkpoint in one process score the same: top-1 $two, loss $two_loss / $one_loss"

# A rank whose evaluation set differs from rank 0's would take another number of turns in
# every evaluation: it is refused at the start, naming both sizes.
cp -r "$work/data/folder" "$work/fewer"
rm "$(find "$work/fewer/val" -type f | sort | head -n 1)"
own_data=(sh -c 'if [ "$TRELLIS_RANK" = 1 ]; then d=$FEWER; else d=$FULL; fi; exec "$0" "$@" --data "$d"' "$TRAIN")
FULL="$work/data/folder" FEWER="$work/fewer" launch_ranks 2 "$work/differ.out" "${own_data[@]}" \
    "${common[@]}" --batch-size 10 --checkpoint-dir "$work/ckpt-differ" --log-dir "$work/differ"
for pid in "${rank_pids[@]}"; do wait "$pid" && fail "ranks with different evaluation sets ran: $(cat "$work"/differ.out.*)"; done
grep -q "the evaluation set has 20 samples here but 21 on rank 0" "$work/differ.out.1" ||
    fail "rank 1 did not name the difference: $(cat "$work/differ.out.1")"
pass "a rank with another evaluation set is refused: $(grep -o 'the evaluation set has [^(]*' "$work/differ.out.1")"

# --target-accuracy with nothing to evaluate on is refused before any training.
"$TRAIN" --model resnet8 --image-size 32 --data synthetic --steps 2 --eval-every 1 --target-accuracy 0.5 \
    >"$work/target.out" 2>&1
status=$?
[ $status = 2 ] && grep -q "target-accuracy needs an evaluation set, and synthetic has none" "$work/target.out" ||
    fail "--target-accuracy on synthetic data: exit $status, $(cat "$work/target.out")"
pass "--target-accuracy without an evaluation set is refused (exit 2)"
