#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# On the GPU: a small ResNet learns the generated dataset in fp32, bf16 and fp16, and in fp16
# with every speed item not yet measured (overflow-on-device and fused-norm-join among them)
# (top-1 above the CPU test's threshold within 300 steps), a checkpoint written on the GPU
# resumes on the CPU, and peak GPU memory is reported. Skips (77) with the reason where no GPU is usable.
# Runs the build tree's programs, or a bundle's (scripts/gpu-bundle) with TRELLIS_BIN=BUNDLE/bin.
. "$(dirname "$0")/../train/lib.sh"
# Only "no GPU:" (or a build without the CUDA module) is a skip: a library that does not
# load on a machine with a GPU is a failure.
probe=$("$TRAIN" --device cuda --model resnet8 --batch-size 2 --steps 1 --image-size 32 2>&1)
case $? in
    0) ;;
    2) case $probe in
           *"no GPU: "* | *"no CUDA backend: "*) echo "SKIP: $probe"; exit 77 ;;
       esac
       fail "the GPU probe was refused: $probe" ;;
    *) fail "the GPU cannot be used: $probe" ;;
esac
make_learnable_dataset "$work/data"
threshold=0.90
for run in fp32 bf16 fp16 fp16:all; do
    precision=${run%%:*} speed_items=none
    [ "$run" = "$precision" ] || speed_items=${run#*:}
    out="$work/$run.txt"
    TRELLIS_CUDA_SPEEDUPS=$speed_items "$TRAIN" --device cuda --precision "$precision" --model resnet8 --image-size 32 \
        --batch-size 32 --data "$work/data/folder" --steps 300 --lr 0.8 --lr-schedule cosine --warmup-epochs 1 \
        --weight-decay 5e-4 --display-every 50 --checkpoint-dir "$work/ckpt-$run" >"$out" 2>&1 ||
        { cat "$out"; fail "training in $run failed"; }
    cat "$out"
    grep -q "^Device: .*$precision" "$out" || fail "$run: the device line does not name the precision"
    [ "$speed_items" = none ] || grep -q "^Device: .*speed items: [a-z]" "$out" ||
        fail "$run: the device line does not name the speed items"
    grep -q "^peak GPU memory: [0-9]* MiB" "$out" || fail "$run: no peak GPU memory line"
    top1=$(sed -n 's/^Accuracy @ 1 = \([0-9.]*\).*/\1/p' "$out" | tail -n 1)
    "$PYTHON3" -c "import sys; sys.exit(0 if ${top1:-0} >= $threshold else 1)" ||
        fail "$run: top-1 ${top1:-none} is below $threshold"
    pass "$run: top-1 $top1 >= $threshold after 300 steps on the GPU (speed items: $speed_items)"
done
# The checkpoint layout is the same on both backends: the GPU's fp32 run goes on on the CPU.
"$TRAIN" --device cpu --model resnet8 --image-size 32 --batch-size 32 --data "$work/data/folder" --steps 310 \
    --lr 0.8 --lr-schedule cosine --warmup-epochs 1 --weight-decay 5e-4 --checkpoint-dir "$work/ckpt-fp32" --resume \
    >"$work/resumed.txt" 2>&1 || { cat "$work/resumed.txt"; fail "resuming the GPU checkpoint on the CPU failed"; }
grep -q "resumed from .* at step 300" "$work/resumed.txt" && pass "a GPU checkpoint resumes on the CPU" ||
    fail "the CPU run did not resume the GPU checkpoint: $(head -n 3 "$work/resumed.txt")"
