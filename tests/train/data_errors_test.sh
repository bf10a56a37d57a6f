#!/bin/bash
# Bad data: a corrupt JPEG, a record with a CRC mismatch and a truncated shard are skipped
# with a warning naming the file (and offset) while training goes on; --strict-data stops on
# them; a missing or empty dataset is an error before training.
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
short=(--model resnet8 --image-size 32 --batch-size 32 --steps 40 --display-every 40 --data-threads 2)

# A JPEG replaced by garbage.
victim=$(ls "$work/data/folder/train"/*/*.JPEG | head -n 3 | tail -n 1)
echo "this is not a JPEG" >"$victim"
"$TRAIN" "${short[@]}" --data "$work/data/folder" >"$work/out" 2>&1 || { cat "$work/out"; fail "run with a corrupt JPEG failed"; }
grep -F "$victim" "$work/out" | grep -qi "skip" || { cat "$work/out"; fail "no warning naming $victim"; }
grep -q "total images/sec" "$work/out" || fail "training did not finish with a corrupt JPEG"
pass "corrupt JPEG skipped with a warning naming it"
"$TRAIN" "${short[@]}" --data "$work/data/folder" --strict-data >"$work/out" 2>&1 && fail "--strict-data accepted a corrupt JPEG"
[ $? -eq 1 ] || fail "--strict-data: exit status not 1"
grep -F "$victim" "$work/out" >/dev/null || { cat "$work/out"; fail "--strict-data error does not name $victim"; }
pass "--strict-data stops on the corrupt JPEG, exit 1"

# Flipped bytes inside records (CRC mismatches; records are about 2.4 kB, so twenty flips
# damage about twenty of the 250 records, enough for some to be drawn in 40 steps) and a
# truncated shard tail.
shard=$(ls "$work/data/tfrecord"/train-* | head -n 1)
last=$(ls "$work/data/tfrecord"/train-* | tail -n 1)
for k in $(seq 0 19); do
    printf '\xff' | dd of="$shard" bs=1 seek=$((200 + 2500 * k)) conv=notrunc status=none
done
truncate -s -100 "$last"
"$TRAIN" "${short[@]}" --data "tfrecord:$work/data/tfrecord/train-*" >"$work/out" 2>&1 ||
    { cat "$work/out"; fail "run with damaged shards failed"; }
grep -F "$shard" "$work/out" | grep -qi "crc" || { cat "$work/out"; fail "no CRC warning naming $shard"; }
grep -F "$last" "$work/out" | grep -qiE "truncat|byte" || { cat "$work/out"; fail "no warning naming the truncated $last"; }
grep -q "total images/sec" "$work/out" || fail "training did not finish with damaged shards"
pass "CRC mismatch and truncated shard warned (file and offset), training went on"

# Missing and empty datasets.
"$TRAIN" "${short[@]}" --data "$work/nowhere" >"$work/out" 2>&1
[ $? -eq 2 ] || fail "a missing dataset folder: exit status not 2"
grep -q "nowhere" "$work/out" || fail "missing dataset: message does not name the path"
mkdir -p "$work/empty/train"
"$TRAIN" "${short[@]}" --data "$work/empty" >"$work/out" 2>&1
[ $? -eq 1 ] || fail "an empty dataset: exit status not 1"
grep -q "$work/empty" "$work/out" || { cat "$work/out"; fail "empty dataset: message does not name the path"; }
grep -q "Step" "$work/out" && fail "empty dataset: training started"
"$TRAIN" "${short[@]}" --data "tfrecord:$work/none-*" >"$work/out" 2>&1 && fail "a glob matching nothing was accepted"
pass "missing and empty datasets refused before training"

# IDX files: a truncated image file and a missing label file are refused before training,
# naming the file and what was expected.
mkdir -p "$work/idx"
"$PYTHON3" - "$work/idx" <<'PY'
import gzip, struct, sys
folder = sys.argv[1]
with gzip.open(folder + "/train-images-idx3-ubyte.gz", "wb") as f:  # 100 images announced, 10 present
    f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, 100, 28, 28) + bytes(10 * 28 * 28))
PY
"$TRAIN" "${short[@]}" --data "idx:$work/idx" >"$work/out" 2>&1
[ $? -eq 1 ] && grep -q "train-images-idx3-ubyte.gz: truncated: 7840 of the 78400 values" "$work/out" ||
    { cat "$work/out"; fail "a truncated IDX file: $(tail -n 1 "$work/out")"; }
"$PYTHON3" -c "
import gzip, struct, sys
with gzip.open('$work/idx/train-images-idx3-ubyte.gz', 'wb') as f:
    f.write(struct.pack('>BBBBIII', 0, 0, 8, 3, 10, 28, 28) + bytes(10 * 28 * 28))"
"$TRAIN" "${short[@]}" --data "idx:$work/idx" >"$work/out" 2>&1
[ $? -eq 1 ] && grep -q "train-labels-idx1-ubyte.gz: cannot open" "$work/out" ||
    { cat "$work/out"; fail "a missing IDX label file: $(tail -n 1 "$work/out")"; }
pass "a truncated IDX file and a missing label file are refused, naming the file"
