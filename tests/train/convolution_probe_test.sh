#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The CPU backend's convolution probe: a oneDNN that dies making a convolution on this CPU
# (oneDNN 3.7.2 dies of SIGFPE on some AMD EPYC virtual machines) refuses the run with one
# line naming the library, its version, the CPU and the way out, exit status 3, no core file and
# no bare "Floating point exception". TRELLIS_TEST_CONVOLUTION_PROBE makes the probe's child die
# as that library does, so that every CPU tests the refusal; without it the probe must let this
# machine's runs through, or refuse them with that very line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/onednn_fault.sh"
# Core files allowed, and the runs in $work, where one would be left.
ulimit -c unlimited 2>/dev/null
run_in_work() { (cd "$work" && "$@"); }
short=(--model resnet8 --batch-size 4 --steps 2 --threads 1 --display-every 1)

run_in_work env TRELLIS_TEST_CONVOLUTION_PROBE=sigfpe "$TRAIN" "${short[@]}" >"$work/out" 2>&1
status=$?
[ $status -eq 3 ] || { cat "$work/out"; fail "a oneDNN dying of SIGFPE: exit status $status, expected 3 (refused)"; }
[ "$(wc -l <"$work/out")" -eq 1 ] || { cat "$work/out"; fail "a oneDNN dying of SIGFPE: expected one line, no run"; }
grep -qE "$onednn_fault_signature" "$work/out" || { cat "$work/out"; fail "a oneDNN dying of SIGFPE: the line does not name the library, the CPU and the way out"; }
ls "$work"/core* >/dev/null 2>&1 && fail "the probe's child left a core file"
pass "a oneDNN dying of SIGFPE: refused with one line, status 3, no core file: $(cat "$work/out")"

run_in_work env TRELLIS_TEST_CONVOLUTION_PROBE=sigsegv "$TRAIN" "${short[@]}" >"$work/out" 2>&1
status=$?
[ $status -eq 1 ] && [ "$(wc -l <"$work/out")" -eq 1 ] && grep -qE '^trellis-train: oneDNN .* the convolution probe .* died of SIGSEGV on this CPU' "$work/out" ||
    { cat "$work/out"; fail "a probe dying of SIGSEGV: status $status, expected 1 with one line naming the signal"; }
pass "a probe dying of another signal: status 1, the signal named"

run_in_work env TRELLIS_TEST_CONVOLUTION_PROBE=boom "$TRAIN" "${short[@]}" >"$work/out" 2>&1
status=$?
[ $status -eq 2 ] && grep -qF "TRELLIS_TEST_CONVOLUTION_PROBE=boom: not a test hook (accepted: sigfpe, sigsegv)" "$work/out" ||
    { cat "$work/out"; fail "an unknown hook value: status $status, expected 2 naming the accepted values"; }
pass "an unknown hook value refused with the accepted ones"

# Parameter servers make the model on the CPU too: each rank, server or worker, refuses by itself.
launch_ranks 2 "$work/ps" run_in_work env TRELLIS_TEST_CONVOLUTION_PROBE=sigfpe "$TRAIN" "${short[@]}" --strategy ps --ps-servers 1 \
    --comm-timeout 20
for r in 0 1; do
    wait "${rank_pids[$r]}"
    status=$?
    [ $status -eq 3 ] && grep -qE "$onednn_fault_signature" "$work/ps.$r" || { cat "$work"/ps.*; fail "ps rank $r: status $status, not the refusal"; }
done
pass "a parameter-server run: worker and server each refused with the line"

# This machine's own oneDNN: the probe lets the run through, or refuses it with that very line.
run_in_work "$TRAIN" "${short[@]}" >"$work/out" 2>&1
status=$?
if [ $status -eq 3 ] && grep -qE "$onednn_fault_signature" "$work/out"; then
    pass "this CPU has the fault: $(cat "$work/out")"
elif [ $status -eq 0 ] && grep -q "^total images/sec" "$work/out"; then
    pass "this machine's oneDNN makes the probe's convolution: the run went through"
else
    cat "$work/out"
    fail "without the hook: status $status, neither a run nor the refusal"
fi
