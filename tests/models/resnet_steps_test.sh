#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ResNet-20 in trellis against the same network written in PyTorch
# (tests/models/resnet_steps_pytorch.py, Debian's python3-torch) over several training steps at
# batch 128, residual joins and shortcuts included: from the same parameters, 4 steps of SGD with
# momentum and weight decay on batches that can be learnt, then an evaluation with the running
# statistics. Each step's loss, the parameters and running statistics after the steps and the
# evaluation's loss must be as close to PyTorch's run in float64 as PyTorch's own float32 run is
# (or within 1e-4). On the CPU, 16x16 images (three stages down to 4x4) so that PyTorch's float64
# run takes seconds, 10 classes. Skips without python3-torch.
. "$(dirname "$0")/../train/lib.sh"
python=/usr/bin/python3
"$python" -c "import torch" 2>/dev/null || { echo "SKIP: python3-torch is not installed"; exit 77; }
export OMP_NUM_THREADS=2
"$TRELLIS_BUILD/tests/models/zoo_export" resnet20 16 128 10 0 "$work/resnet20" 4 0.1 >"$work/export.out" ||
    { cat "$work/export.out"; fail "zoo_export resnet20 (4 steps) failed"; }
"$python" "$(dirname "$0")/resnet_steps_pytorch.py" "$work/resnet20.json" >"$work/compare.out"
status=$?
cat "$work/compare.out"
[ $status -eq 0 ] || fail "resnet20 over 4 steps at batch 128 differs from PyTorch (MISMATCH lines above)"
pass "resnet20: 4 steps at batch 128 and an evaluation with running statistics as PyTorch's"
