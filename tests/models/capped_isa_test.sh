#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The numerical suites once more with oneDNN held to an older x86-64 ISA than this CPU's.
# These machines' CPUs differ from session to session (AVX-512 on one, AVX2 only on the
# next), and so may CI's; oneDNN picks other kernels for each ISA (other blockings, so other
# summation orders, and other fallbacks), and every tolerance must hold for all of them: a
# landing once failed on an AVX2-only machine after passing on an AVX-512 one.
#   AVX2:  the layers' gradient checks, the loss and the optimizers (tests/unit/nn_test), the
#          convolution's refusal of reference kernels, and the batch-norm models against
#          PyTorch (inception3 and inception4: the deep, ill-conditioned ones, where the ISA
#          moved the result; TRELLIS_ZOO_MODELS names others).
#   SSE41: the layer-level checks only (seconds).
# A cap that is not below this CPU's own ISA would repeat the uncapped run: it is skipped,
# saying so. Debian 12's oneDNN (2.6) reads DNNL_MAX_CPU_ISA and ONEDNN_MAX_CPU_ISA, later
# ones ONEDNN_MAX_CPU_ISA: both are set (PyTorch's own oneDNN reads them too).
. "$(dirname "$0")/../train/lib.sh"
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { [[ " $flags " == *" $1 "* ]]; }
layer_checks='[#layers_gradient_test],[#loss_test],[#optimizer_test]'
ran=0
for isa in AVX2 SSE41; do
    case $isa in
        AVX2) has avx512f || { echo "AVX2: skipped, this CPU has no AVX-512 (the uncapped run is the AVX2 run)"; continue; } ;;
        SSE41) has avx || { echo "SSE41: skipped, this CPU has no AVX (the uncapped run is the SSE41 run)"; continue; } ;;
    esac
    export DNNL_MAX_CPU_ISA=$isa ONEDNN_MAX_CPU_ISA=$isa
    start=$SECONDS
    "$TRELLIS_BUILD/tests/unit/nn_test" -# "$layer_checks" >"$work/nn.log" 2>&1 ||
        { cat "$work/nn.log"; fail "$isa: the layers' numerical checks"; }
    pass "$isa: the layers' gradient checks, the loss and the optimizers ($((SECONDS - start)) s)"
    ran=1
    [ "$isa" = AVX2 ] || continue
    "$TRELLIS_BUILD/tests/unit/reference_kernels_test" >"$work/ref.log" 2>&1 ||
        { cat "$work/ref.log"; fail "$isa: a convolution ran a reference kernel"; }
    start=$SECONDS
    TRELLIS_ZOO_MODELS=${TRELLIS_ZOO_MODELS:-inception3 inception4} "$(dirname "$0")/zoo_pytorch_test.sh"
    case $? in
        0) pass "$isa: the models against PyTorch ($((SECONDS - start)) s)" ;;
        77) echo "$isa: the models against PyTorch skipped (no python3-torch)" ;;
        *) fail "$isa: the models against PyTorch" ;;
    esac
done
[ $ran = 1 ] || { echo "SKIP: this CPU has no ISA above SSE41 and AVX2 to cap"; exit 77; }
