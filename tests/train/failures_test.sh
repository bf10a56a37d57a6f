#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A failed rank stops the job: kill -9 of one of 3 ranks mid-run, and the others exit non-zero
# within 10 s naming it; a frozen rank (SIGSTOP) is given up after --comm-timeout, naming it.
. "$(dirname "$0")/lib.sh"

# kill -9 of rank 1 of 3
launch_ranks 3 "$work/kill.out" "$TRAIN" --model resnet20 --batch-size 16 --steps 100000 --threads 1 \
    --display-every 1 --comm-timeout 60
for _ in $(seq 1 300); do grep -q "^3	" "$work/kill.out.0" 2>/dev/null && break; sleep 0.1; done
grep -q "^3	" "$work/kill.out.0" || { cat "$work"/kill.out.*; fail "the 3-rank run did not get going"; }
kill -KILL "${rank_pids[1]}"
killed_at=$(date +%s.%N)
for r in 0 2; do
    status=0
    timeout 15 tail --pid="${rank_pids[$r]}" -f /dev/null || fail "rank $r still running 15 s after the kill"
    wait "${rank_pids[$r]}" || status=$?
    [ $status -ne 0 ] || fail "rank $r exited 0 after rank 1 was killed"
    grep -q "rank 1 " "$work/kill.out.$r" || { cat "$work/kill.out.$r"; fail "rank $r does not name rank 1"; }
done
elapsed=$("$PYTHON3" -c "import time; print(round(time.time() - $killed_at, 1))")
"$PYTHON3" -c "import sys; sys.exit(0 if $elapsed < 10 else 1)" || fail "ranks took $elapsed s to stop (limit 10 s)"
echo "rank 0: $(grep stopping "$work/kill.out.0")"
pass "kill -9 of rank 1: ranks 0 and 2 stopped in $elapsed s naming it"

# A frozen rank (SIGSTOP: alive, but neither sending nor beating) is given up after
# --comm-timeout; a busy one is not (the heartbeat; tested in comm_test).
launch_ranks 2 "$work/stop.out" "$TRAIN" --model resnet8 --image-size 32 --batch-size 8 --steps 100000 \
    --threads 1 --display-every 1 --comm-timeout 2
for _ in $(seq 1 300); do grep -q "^3	" "$work/stop.out.0" 2>/dev/null && break; sleep 0.1; done
grep -q "^3	" "$work/stop.out.0" || { cat "$work"/stop.out.*; fail "the 2-rank run did not get going"; }
kill -STOP "${rank_pids[1]}"
stopped_at=$(date +%s.%N)
status=0
timeout 15 tail --pid="${rank_pids[0]}" -f /dev/null || fail "rank 0 still running 15 s after rank 1 froze"
wait "${rank_pids[0]}" || status=$?
kill -KILL "${rank_pids[1]}"; kill -CONT "${rank_pids[1]}"; wait "${rank_pids[1]}" || true
[ $status -ne 0 ] || fail "rank 0 exited 0 after rank 1 froze"
grep -q "rank 1 .*heartbeat.*--comm-timeout" "$work/stop.out.0" || { cat "$work/stop.out.0"; fail "rank 0 does not name the frozen rank 1"; }
elapsed=$("$PYTHON3" -c "import time; print(round(time.time() - $stopped_at, 1))")
pass "a frozen rank 1 is given up after the 2 s --comm-timeout: rank 0 stopped in $elapsed s naming it"
