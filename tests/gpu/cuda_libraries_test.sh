#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Where trellis-train finds the CUDA libraries and what it says when it cannot, on a machine
# without a GPU: "no GPU:" (the prefix the GPU tests skip on) only when every library loaded,
# naming the copies loaded; a library that cannot be found is an error (exit 1) naming it and
# the driver's state, never "no GPU"; and the search order: TRELLIS_CUDA_LIBS, then the
# venv in VIRTUAL_ENV, then the prefix of the python3 on PATH, then the module's RUNPATH.
# Skips where the CUDA module was not built, or on a machine with a GPU (its own tests run there).
. "$(dirname "$0")/../train/lib.sh"
module=${TRELLIS_CUDA_MODULE:-$TRELLIS_BUILD/.libs/trellis-cuda.so}
export TRELLIS_CUDA_MODULE=$module  # layers_test, in tests/gpu, finds the build tree's only so
[ -f "$module" ] || { echo "SKIP: no CUDA module ($module): configure found no CUDA"; exit 77; }
[ -e /proc/driver/nvidia/version ] && { echo "SKIP: this machine has an NVIDIA driver: tests/gpu/layers_test runs"; exit 77; }
# The folder the module's RUNPATH names: its copies of cuDNN and cuBLAS are the ones to link to.
cuda_lib=$(readelf -d "$module" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p' | cut -d: -f1)
[ -f "$cuda_lib/libcudnn.so.9" ] || { echo "SKIP: no cuDNN in the module's RUNPATH ($cuda_lib)"; exit 77; }
probe() { "$TRAIN" --device cuda --model resnet8 --batch-size 2 --steps 1 --data synthetic --image-size 32 2>&1; }

out=$(probe); rc=$?
[ $rc -eq 2 ] || fail "no GPU: exit $rc, expected 2: $out"
case $out in
    *"trellis-train: no GPU: "*"$cuda_lib/libcudnn.so.9"*) pass "no GPU (exit 2), naming the libraries loaded from the module's RUNPATH" ;;
    *) fail "the no-GPU message does not start with 'no GPU:' or name $cuda_lib/libcudnn.so.9: $out" ;;
esac

# The libraries as NVIDIA's wheels lay them out, linked to the real ones.
wheels() {  # PREFIX
    local site=$1/lib/python3.12/site-packages/nvidia
    mkdir -p "$site/cudnn/lib" "$site/cu13/lib"
    ln -s "$cuda_lib"/libcudnn*.so.9 "$site/cudnn/lib/"
    ln -s "$cuda_lib"/libcublas*.so.13 "$site/cu13/lib/"
}
wheels "$work/venv"
out=$(VIRTUAL_ENV=$work/venv probe)
case $out in
    *"no GPU: "*"$work/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"*"$work/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13"*)
        pass "VIRTUAL_ENV's wheels come before the module's RUNPATH" ;;
    *) fail "VIRTUAL_ENV's cuDNN and cuBLAS were not the ones loaded: $out" ;;
esac

mkdir -p "$work/given" "$work/python/bin"
ln -s "$cuda_lib/libcudnn.so.9" "$work/given/"
out=$(TRELLIS_CUDA_LIBS=$work/given VIRTUAL_ENV=$work/venv probe)
case $out in
    *"no GPU: "*"$work/given/libcudnn.so.9"*"$work/venv/"*"libcublas.so.13"*)
        pass "TRELLIS_CUDA_LIBS comes first, each library from the first folder that has it" ;;
    *) fail "TRELLIS_CUDA_LIBS was not searched first: $out" ;;
esac

# A venv's python3 is a link to the system's: its prefix is where the link sits.
wheels "$work/python"
ln -s "$(command -v "$PYTHON3")" "$work/python/bin/python3"
out=$(PATH=$work/python/bin:$PATH probe)
case $out in
    *"no GPU: "*"$work/python/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"*)
        pass "the wheels of the python3 on PATH are found" ;;
    *) fail "the python3 on PATH's wheels were not used: $out" ;;
esac

# Without the libraries: an error naming the missing one and the driver's state (exit 1).
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
    echo "SKIP (part): hiding $cuda_lib needs root and unshare"
else
    hidden() { unshare -m sh -c 'mount -t tmpfs none "$1" && shift && exec "$@"' sh "$cuda_lib" "$@" 2>&1; }
    out=$(hidden "$TRAIN" --device cuda --model resnet8 --batch-size 2 --steps 1 --data synthetic); rc=$?
    [ $rc -eq 1 ] || fail "without cuDNN: exit $rc, expected 1: $out"
    case $out in
        *"no GPU"*) fail "a missing library was reported as no GPU: $out" ;;
        # "not loaded", or "present (/dev/nvidiactl; ...)" while a test cluster beside this test
        # has made the device nodes: either names the driver's state.
        *"libcudnn.so.9: not found"*"NVIDIA driver: "*) pass "without cuDNN: exit 1 naming libcudnn.so.9 and the driver's state" ;;
        *) fail "the missing library or the driver's state is not named: $out" ;;
    esac
    out=$(hidden "$TRELLIS_BUILD/tests/gpu/layers_test"); rc=$?
    [ $rc -eq 1 ] && pass "layers_test fails (not skips) when cuDNN is missing" ||
        fail "layers_test without cuDNN: exit $rc, expected 1: $out"
    # Device nodes without the driver's /proc entry (Slurm's gres files on the test cluster,
    # or a sandbox): --device auto asks the driver, finds none, and trains on the CPU saying why.
    with_nvidiactl() {
        unshare -m sh -c 'old=$(mktemp -d) && mount --rbind /dev "$old" && mount -t tmpfs none /dev &&
            for n in null zero random urandom; do touch /dev/$n && mount --bind "$old/$n" /dev/$n; done &&
            touch /dev/nvidiactl && exec "$@"' sh "$@" 2>&1
    }
    out=$(with_nvidiactl "$TRAIN" --model resnet8 --batch-size 2 --steps 1 --data synthetic --image-size 32); rc=$?
    case "$rc $out" in
        "0 "*"Device: "*"cpu (oneDNN)"*"no GPU: /dev/nvidiactl is there, but no NVIDIA driver (no /proc/driver/nvidia, no libcuda.so.1)"*)
            pass "--device auto with /dev/nvidiactl but no driver: the CPU, saying why" ;;
        *) fail "--device auto with /dev/nvidiactl but no driver: exit $rc: $out" ;;
    esac
    # --device auto does not load CUDA where no driver is loaded: the CPU trains.
    out=$(hidden "$TRAIN" --model resnet8 --batch-size 2 --steps 1 --data synthetic --image-size 32); rc=$?
    [ $rc -eq 0 ] && pass "--device auto trains on the CPU without the driver or cuDNN" ||
        fail "--device auto without the driver: exit $rc: $out"
fi
