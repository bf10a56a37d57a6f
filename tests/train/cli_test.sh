#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# trellis-train's command line: help, refusals with exit status 2, synthetic training output.
. "$(dirname "$0")/lib.sh"
"$TRAIN" --help | grep -q -- "--checkpoint-dir" || fail "--help does not list the options"
for bad in "--batch-size 0" "--model resnet42" "--optimizer adam" "--steps 5 --epochs 1" "--threads x" "--bogus" \
    "--device gpu" "--precision fp8" "--device cpu --precision bf16" "--device cpu --transport nccl" \
    "--transport nccl --strategy ps" "--cudnn-workspace-mb 0" "--strategy ps --precision fp16" \
    "--allreduce-algorithm tree"; do
    # shellcheck disable=SC2086
    "$TRAIN" $bad >"$work/out" 2>&1
    status=$?
    [ $status -eq 2 ] || fail "'$bad': exit status $status, expected 2"
    [ "$(wc -l <"$work/out")" -eq 1 ] || { cat "$work/out"; fail "'$bad': expected a one-line error"; }
    grep -q "^trellis-train: " "$work/out" || fail "'$bad': error does not start with trellis-train:"
done
pass "bad command lines refused with one line and exit status 2"
grep -q "resnet18, resnet34" < <("$TRAIN" --model resnet42 2>&1) || fail "unknown model: accepted models not listed"
# The same option is spelt, and refused, the same way in trellis-train and trellis-bench.
refusal="invalid value 'tree' for --allreduce-algorithm (accepted: auto, ring, halving-doubling, hierarchical)"
grep -qF "$refusal" < <("$TRAIN" --allreduce-algorithm tree 2>&1) ||
    fail "unknown allreduce algorithm: accepted ones not listed"
grep -qF "$refusal" < <("$TRELLIS_BUILD/trellis-bench" allreduce --allreduce-algorithm tree 2>&1) ||
    fail "trellis-bench --allreduce-algorithm tree: not refused as trellis-train refuses it"
grep -qF "$refusal" < <("$TRELLIS_BUILD/trellis-bench" allreduce --algorithm tree 2>&1) ||
    fail "trellis-bench --algorithm (the former spelling) tree: accepted ones not listed"
# A misspelt option gets the nearest one in both (the option table in common/ does it).
grep -qF "unknown option '--bach-size': did you mean --batch-size? (see trellis-train --help)" < <("$TRAIN" --bach-size 8 2>&1) ||
    fail "trellis-train --bach-size: no 'did you mean --batch-size?': $("$TRAIN" --bach-size 8 2>&1)"
grep -qF "unknown option '--szies': did you mean --sizes?" < <("$TRELLIS_BUILD/trellis-bench" p2p --szies 1K 2>&1) ||
    fail "trellis-bench p2p --szies: no 'did you mean --sizes?': $("$TRELLIS_BUILD/trellis-bench" p2p --szies 1K 2>&1)"

"$TRAIN" --model resnet8 --batch-size 8 --steps 5 --display-every 1 --warmup-batches 1 >"$work/out" 2>&1 ||
    { cat "$work/out"; fail "synthetic run failed"; }
grep -qE "^5	images/sec: [0-9.]+ \+/- [0-9.]+ \(jitter = [0-9.]+\)	[0-9.]+	" "$work/out" ||
    { cat "$work/out"; fail "no tf_cnn_benchmarks-style progress line"; }
grep -qE "^total images/sec: [0-9.]+" "$work/out" || fail "no total images/sec line"
# The progress figure is images over the wall-clock time of the timed steps so far: at the
# last step it is the total.
progress=$(grep -E "^5	images/sec" "$work/out" | sed -E 's/^5	images\/sec: ([0-9.]+) .*/\1/')
total=$(sed -nE 's/^total images\/sec: ([0-9.]+)/\1/p' "$work/out")
"${PYTHON3:-python3}" -c "import sys; p, t = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(p - t) <= 0.06 + 0.001 * t else 1)" \
    "$progress" "$total" || fail "the last progress figure $progress is not the total $total"
grep -q "^Step	Img/sec (so far" "$work/out" || fail "the header does not name the progress fields: $(grep '^Step' "$work/out")"
pass "synthetic run prints progress and total images/sec; the last progress figure is the total"

# Compute threads follow the affinity mask the binding sets, unless --threads says otherwise.
taskset -c 0 "$TRAIN" --model resnet8 --batch-size 8 --steps 1 >"$work/out" 2>&1 || fail "run under taskset failed"
grep -qE "Device: *cpu \(oneDNN\), 1 thread(;|$)" "$work/out" || { cat "$work/out"; fail "one allowed CPU did not give one thread"; }
taskset -c 0 "$TRAIN" --model resnet8 --batch-size 8 --steps 1 --threads 3 >"$work/out" 2>&1 || fail "--threads 3 failed"
grep -q "3 threads" "$work/out" || fail "--threads 3 not honoured"
pass "threads follow the affinity mask; --threads overrides"

# The warm-up is in the header, and a warning says when it outlasts the run (the example
# batch script's 5 epochs in a short trial): 0.01 of synthetic data's 160,000 steps per epoch.
"$TRAIN" --model resnet8 --batch-size 8 --image-size 32 --steps 2 --warmup-epochs 0.01 --threads 1 >"$work/out" 2>&1 ||
    { cat "$work/out"; fail "a run with a warm-up failed"; }
grep -q "^Optimizer: .*, 2 steps (.* per epoch), warm-up 1601 steps (0.01 epochs)$" "$work/out" ||
    fail "the header does not give the warm-up: $(grep '^Optimizer' "$work/out")"
grep -q "^warning: the warm-up (--warmup-epochs 0.01, 1601 steps) outlasts the run (2 steps)" "$work/out" ||
    { cat "$work/out"; fail "no warning that the warm-up outlasts the run"; }
pass "the header gives the warm-up and warns when it outlasts the run"

# Without a GPU, --device auto trains on the CPU and says why; --device cuda is refused with the
# reason (a machine with the NVIDIA driver loaded leaves this to tests/gpu).
if [ ! -e /proc/driver/nvidia/version ]; then
    "$TRAIN" --model resnet8 --batch-size 4 --steps 1 >"$work/out" 2>&1 || fail "--device auto without a GPU failed"
    # A test cluster running beside this test (make -j check) makes /dev/nvidiactl, which
    # changes the reason given: either is right.
    grep -q -E "^Device: *cpu \(oneDNN\), .*no GPU: (the NVIDIA driver is not loaded|/dev/nvidiactl is there, but no)" "$work/out" ||
        { cat "$work/out"; fail "--device auto does not say why it chose the CPU"; }
    "$TRAIN" --device cuda --model resnet8 --batch-size 4 --steps 1 >"$work/out" 2>&1
    status=$?
    [ $status -eq 2 ] && grep -q -E "^trellis-train: no (GPU|CUDA backend): .*\(--device cuda\)$" "$work/out" ||
        { cat "$work/out"; fail "--device cuda without a GPU: exit status $status, expected 2 with the reason"; }
    pass "no GPU: --device auto uses the CPU and says why; --device cuda refused: $(cat "$work/out")"
    "$TRAIN" --precision bf16 --model resnet8 --batch-size 4 --steps 1 >"$work/bf16" 2>&1
    status=$?
    [ $status -eq 2 ] && grep -q -E "^trellis-train: no (GPU|CUDA backend): .*\(--precision bf16 needs a GPU\)$" "$work/bf16" ||
        { cat "$work/bf16"; fail "--precision bf16 without a GPU: exit status $status, expected 2 with the reason"; }
    # Where the CUDA module was built, "no GPU" comes only after it loaded (RTLD_NOW: every
    # symbol it takes from the program resolved) with cuDNN and cuBLAS.
    if [ -f "${TRELLIS_CUDA_MODULE:-}" ]; then
        grep -q "^trellis-train: no GPU: .*; loaded: cuDNN" "$work/out" || fail "the CUDA module did not load: $(cat "$work/out")"
        pass "the CUDA module and its libraries load into trellis-train (then: no GPU)"
    fi
fi
