#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A small ResNet learns the generated dataset, read as JPEG folders and as TFRecords: top-1 on
# the held-out images well above chance (10 classes) within 300 steps.
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
threshold=0.90
for data in "$work/data/folder" "tfrecord:$work/data/tfrecord/train-*"; do
    out="$work/out.txt"
    "$TRAIN" --model resnet8 --image-size 32 --batch-size 32 --data "$data" --steps 300 --lr 0.8 \
        --lr-schedule cosine --warmup-epochs 1 --weight-decay 5e-4 --display-every 50 \
        --log-dir "$work/log" >"$out" 2>&1 || { cat "$out"; fail "training on $data failed"; }
    cat "$out"
    top1=$(sed -n 's/^Accuracy @ 1 = \([0-9.]*\).*/\1/p' "$out" | tail -n 1)
    [ -n "$top1" ] || fail "no accuracy line for $data"
    "$PYTHON3" -c "import sys; sys.exit(0 if $top1 >= $threshold else 1)" ||
        fail "top-1 $top1 on $data is below $threshold"
    pass "$data: top-1 $top1 >= $threshold after 300 steps"
done
[ -s "$work/log/metrics.jsonl" ] || fail "no metrics.jsonl"
ls "$work/log"/events.out.tfevents.* >/dev/null 2>&1 || fail "no TensorBoard event file"
grep -q '"kind":"eval"' "$work/log/metrics.jsonl" || fail "no evaluation record in metrics.jsonl"
pass "metrics.jsonl and TensorBoard events written"

# TFRecord index files: --write-index writes one per shard (training and validation) and exits;
# the next run reads them instead of the shards' framing, and learns the same.
"$TRAIN" --data "tfrecord:$work/data/tfrecord/train-*" --write-index >"$work/index.out" 2>&1 ||
    { cat "$work/index.out"; fail "--write-index"; }
[ "$(ls "$work/data/tfrecord/"*.idx | wc -l)" -eq "$(ls "$work/data/tfrecord/" | grep -vc '\.idx$')" ] ||
    fail "not one index per shard: $(ls "$work/data/tfrecord/")"
grep -q "index files written" "$work/index.out" || fail "no summary: $(cat "$work/index.out")"
"$TRAIN" --model resnet8 --image-size 32 --batch-size 32 --data "tfrecord:$work/data/tfrecord/train-*" --steps 3 \
    >"$work/indexed.out" 2>&1 || { cat "$work/indexed.out"; fail "training with index files"; }
grep -q "4 shards indexed by .idx files" "$work/indexed.out" || fail "the index files were not used: $(grep Data "$work/indexed.out")"
"$TRAIN" --data "$work/data/folder" --write-index >"$work/index.out" 2>&1
[ $? -eq 2 ] && grep -q "is for --data tfrecord:GLOB" "$work/index.out" || fail "--write-index on a folder: $(cat "$work/index.out")"
pass "TFRecord index files written by --write-index and used at start-up"

# --pixels bytes (a GPU's default): the pipeline hands over bytes and the backend normalises
# them. The same pixels, rounded to bytes after resampling, give losses within 1% of
# normalised floats over 10 steps, with the same evaluation counts.
pixels=(--model resnet8 --image-size 32 --batch-size 16 --data "$work/data/folder" --steps 10 --lr 0.1
        --deterministic --threads 1 --data-threads 1 --display-every 10)
for kind in floats bytes; do
    "$TRAIN" "${pixels[@]}" --pixels $kind --log-dir "$work/pixels-$kind" >"$work/pixels-$kind.out" 2>&1 ||
        { cat "$work/pixels-$kind.out"; fail "--pixels $kind"; }
done
grep -q "decoding thread, bytes normalised by the backend" "$work/pixels-bytes.out" ||
    fail "the header does not say bytes: $(grep Data "$work/pixels-bytes.out")"
grep -q "decoding thread, normalised floats" "$work/pixels-floats.out" ||
    fail "the header does not say floats: $(grep Data "$work/pixels-floats.out")"
difference=$(mean_relative_difference "$work/pixels-floats/metrics.jsonl" "$work/pixels-bytes/metrics.jsonl" 10)
"$PYTHON3" -c "import sys; sys.exit(0 if $difference < 0.01 else 1)" ||
    fail "bytes and floats differ by $difference over 10 steps (tolerance 0.01)"
pass "--pixels bytes trains as floats do: mean relative loss difference $difference over 10 steps"
