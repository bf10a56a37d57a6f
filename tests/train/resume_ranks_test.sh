#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Resuming with 2 ranks whose checkpoint folders differ (as node-local disks would): rank 0
# alone reads its folder and every rank starts from its step, data position and weights, so
# the resumed run's losses equal the uninterrupted run's. A resume whose learning-rate
# schedule differs from the checkpoint's is warned about.
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
common=(--model resnet8 --image-size 32 --batch-size 16 --data "$work/data/folder" --lr 0.05 --deterministic
        --threads 1 --data-threads 1 --display-every 100 --comm-timeout 20)
# Each rank gets its own checkpoint folder, ckpt.RANK.
own_folder=(sh -c 'exec "$0" "$@" --checkpoint-dir "$FOLDERS.$TRELLIS_RANK"' "$TRAIN")
export FOLDERS="$work/ckpt"

launch_ranks 2 "$work/whole.out" "$TRAIN" "${common[@]}" --steps 8 --log-dir "$work/whole"
wait_ranks "$work/whole.out" "the uninterrupted run"
launch_ranks 2 "$work/first.out" "${own_folder[@]}" "${common[@]}" --steps 4 --log-dir "$work/resumed"
wait_ranks "$work/first.out" "the first half"
[ -e "$work/ckpt.0/checkpoint-4.trellis" ] || fail "rank 0 saved no checkpoint-4: $(ls "$work"/ckpt.*)"
[ -e "$work/ckpt.1" ] && fail "rank 1 touched its folder: $(ls -a "$work/ckpt.1")"
launch_ranks 2 "$work/second.out" "${own_folder[@]}" "${common[@]}" --steps 8 --resume --log-dir "$work/resumed"
wait_ranks "$work/second.out" "the resumed run"
grep -q "resumed from .* at step 4 (epoch 0, batch 4)" "$work/second.out.0" || fail "rank 0 did not resume: $(head -n 3 "$work/second.out.0")"
losses_of "$work/whole/metrics.jsonl" | awk '$1 > 4' >"$work/expected.txt"
losses_of "$work/resumed/metrics.jsonl" | awk '$1 > 4' >"$work/got.txt"
[ "$(wc -l <"$work/got.txt")" -eq 4 ] || fail "the resumed run logged $(wc -l <"$work/got.txt") steps after 4, not 4"
diff "$work/expected.txt" "$work/got.txt" || fail "the losses of steps 5-8 differ from the uninterrupted run's"
pass "2 ranks with different checkpoint folders resume in step: steps 5-8 have the uninterrupted run's losses"

# Another base learning rate on resuming: the run goes on, and says what changed.
launch_ranks 2 "$work/lr.out" "${own_folder[@]}" "${common[@]}" --steps 10 --resume --lr 0.1
wait_ranks "$work/lr.out" "the resumed run with another learning rate"
grep -q "warning: the learning-rate schedule changed on resuming: the checkpoint's was step from lr 0.00625.*this run's is step from lr 0.0125" \
    "$work/lr.out.0" || fail "no warning about the changed schedule: $(grep -i schedule "$work/lr.out.0")"
pass "a resume with another schedule is warned about, naming both"

# 3 ranks cannot share the checkpoint's global batch of 32: rank 0's reason, with the rank
# counts and options that would work, comes before the others' "stopping" lines (all three
# write to one file, in the order they write).
port=$(free_port)
for r in 0 1 2; do
    TRELLIS_RANK=$r TRELLIS_WORLD_SIZE=3 TRELLIS_MASTER=127.0.0.1:$port \
        "${own_folder[@]}" "${common[@]}" --batch-size 11 --steps 12 --resume >>"$work/three.out" 2>&1 &
done
wait
head -n 1 "$work/three.out" | grep -q "rank 0 (.*): checkpoint: .*: global batch is 32, this run has 33; 32 is not divisible by 3 ranks: resume on 1, 2, 4, 8, 16 or 32 ranks with --batch-size x --accumulate = 32 / ranks (on 2: --batch-size 16, or --batch-size 8 --accumulate 2)" ||
    { cat "$work/three.out"; fail "the global batch refusal is not the first line, or gives no way forward"; }
[ "$(grep -c stopping "$work/three.out")" -eq 2 ] || { cat "$work/three.out"; fail "ranks 1 and 2 did not both stop"; }
pass "a resume on 3 ranks of a global batch of 32: the cause first, with the rank counts and options that work"
