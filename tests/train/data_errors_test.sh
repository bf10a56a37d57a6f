#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Bad data: a corrupt JPEG, a record with a CRC mismatch and a truncated shard are skipped
# with a warning naming the file (and offset) while training goes on; --strict-data stops on
# them (exit 1). A --data that names no dataset of its kind (missing, empty, another layout,
# IDX files without idx:) is refused before training with one line and exit 2.
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
short=(--model resnet8 --image-size 32 --batch-size 32 --steps 40 --display-every 40 --data-threads 2)

# refused SPEC TEXT WHAT: --data SPEC exits 2 before training with one line that holds TEXT.
refused() {
    "$TRAIN" "${short[@]}" --data "$1" >"$work/out" 2>&1
    local status=$?
    [ $status -eq 2 ] && [ "$(wc -l <"$work/out")" -eq 1 ] && grep -qF -- "$2" "$work/out" ||
        { cat "$work/out"; fail "$3: exit status $status, $(wc -l <"$work/out") lines, expected 2 and one line with '$2'"; }
}

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

# Missing, empty and wrongly laid out datasets.
refused "$work/nowhere" "$work/nowhere: not a folder" "a missing dataset folder"
mkdir -p "$work/empty/train"
refused "$work/empty" "$work/empty/train: no class folders" "an empty dataset"
mkdir -p "$work/flat"
cp "$victim" "$work/flat/"
refused "$work/flat" "$work/flat/train: no such folder (expected $work/flat/train/<class>/*.JPEG)" "JPEGs without train/<class>/"
mkdir -p "$work/classless/train/dog"
refused "$work/classless" "$work/classless/train: no .JPEG/.jpg/.jpeg files" "class folders without images"
refused "tfrecord:$work/none-*" "tfrecord:$work/none-*: no file matches" "a glob matching nothing"
pass "missing, empty and wrongly laid out datasets refused before training, one line, exit 2"

# IDX files: a truncated image file and a missing label file are refused before training,
# naming the file and what was expected.
mkdir -p "$work/idx"
"$PYTHON3" - "$work/idx" <<'PY'
import gzip, struct, sys
folder = sys.argv[1]
with gzip.open(folder + "/train-images-idx3-ubyte.gz", "wb") as f:  # 100 images announced, 10 present
    f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, 100, 28, 28) + bytes(10 * 28 * 28))
with gzip.open(folder + "/train-labels-idx1-ubyte.gz", "wb") as f:
    f.write(struct.pack(">BBBBI", 0, 0, 8, 1, 100) + bytes(100))
PY
"$TRAIN" "${short[@]}" --data "idx:$work/idx" >"$work/out" 2>&1
[ $? -eq 1 ] && grep -q "train-images-idx3-ubyte.gz: truncated: 7840 of the 78400 values" "$work/out" ||
    { cat "$work/out"; fail "a truncated IDX file: $(tail -n 1 "$work/out")"; }
"$PYTHON3" -c "
import gzip, struct, sys
with gzip.open('$work/idx/train-images-idx3-ubyte.gz', 'wb') as f:
    f.write(struct.pack('>BBBBIII', 0, 0, 8, 3, 10, 28, 28) + bytes(10 * 28 * 28))"
rm "$work/idx/train-labels-idx1-ubyte.gz"
refused "idx:$work/idx" "$work/idx/train-labels-idx1-ubyte.gz: no such file" "a missing IDX label file"
pass "a truncated IDX file (exit 1) and a missing label file (exit 2) are refused, naming the file"

# IDX files given as an image folder, and an idx: folder that is not there.
refused "$work/idx" "use --data idx:$work/idx" "a folder of IDX files without idx:"
refused "idx:$work/nowhere" "idx:$work/nowhere: not a folder" "a missing idx: folder"
pass "a folder of IDX files without idx: says to use idx:; a missing idx: folder is refused"
