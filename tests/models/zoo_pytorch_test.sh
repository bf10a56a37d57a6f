#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Each of tf_cnn_benchmarks' models in trellis against the same network written in PyTorch
# (tests/models/zoo_pytorch.py, Debian's python3-torch): from the same parameters and batch,
# one training step gives the same loss, running statistics and gradients, dropout masks
# included (a training step, at draw 5): as close to PyTorch's step in float64 as PyTorch's
# own float32 step gets, or within 1e-4 (zoo_pytorch.py says how).
# On the CPU, batch 2, 10 classes, at reduced image sizes where the model allows them
# (alexnet 67, vgg16 32, googlenet 193: their minimum); the Inceptions at 299, where their
# last maps are 8x8 (at inception4's minimum, 75, batch norm would see 2 values a channel).
# TRELLIS_ZOO_MODELS names fewer models (distcheck checks alexnet). Skips without python3-torch.
. "$(dirname "$0")/../train/lib.sh"
python=/usr/bin/python3
"$python" -c "import torch" 2>/dev/null || { echo "SKIP: python3-torch is not installed"; exit 77; }
export OMP_NUM_THREADS=2
failed=0
for model in ${TRELLIS_ZOO_MODELS:-alexnet vgg16 googlenet inception3 inception4}; do
    case $model in alexnet) size=67 ;; vgg16) size=32 ;; googlenet) size=193 ;; inception3 | inception4) size=299 ;;
        *) fail "TRELLIS_ZOO_MODELS: unknown model $model (accepted: alexnet vgg16 googlenet inception3 inception4)" ;; esac
    "$TRELLIS_BUILD/tests/models/zoo_export" "$model" "$size" 2 10 5 "$work/$model" >/dev/null ||
        { echo "FAIL: $model: zoo_export failed"; failed=1; continue; }
    if "$python" "$(dirname "$0")/zoo_pytorch.py" "$work/$model.json"; then pass "$model: the same step as PyTorch"
    else echo "FAIL: $model differs from PyTorch"; failed=1; fi
    rm -f "$work/$model".*
done
exit $failed
