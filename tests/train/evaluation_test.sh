#!/bin/bash
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
import json, sys
records = [r for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "eval"]
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
