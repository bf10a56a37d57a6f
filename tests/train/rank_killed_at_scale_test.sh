#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A failure is named across a job of 64 ranks without a heartbeat between every pair: kill -9
# of rank 37 (not linked to rank 0: neither its ring neighbour nor one bit from it) during an
# allreduce, over tcp and over shared memory; every other rank names rank 37 within 2 s (the
# news passed on by the ranks linked to it) and exits non-zero.
. "$(dirname "$0")/lib.sh"
BENCH="$TRELLIS_BUILD/trellis-bench"
ranks=64 victim=37

for transport in tcp shm; do
    out="$work/$transport.out"
    OMP_NUM_THREADS=1 launch_ranks $ranks "$out" "$BENCH" allreduce --transport $transport --sizes 4K \
        --iters 100000000 --warmup 1 --comm-timeout 60 --log-dir "$work/$transport.log"
    # Going: rank 0 has begun its log, and every rank is in the allreduce (a second more).
    log="$work/$transport.log/bench.jsonl"
    for _ in $(seq 1 600); do grep -q '"kind":"run"' "$log" 2>/dev/null && break; sleep 0.1; done
    grep -q '"kind":"run"' "$log" 2>/dev/null || { tail -n 3 "$out".*; fail "$transport: the $ranks-rank job did not get going"; }
    sleep 1
    for pid in "${rank_pids[@]}"; do kill -0 "$pid" 2>/dev/null || { tail -n 3 "$out".*; fail "$transport: a rank ended early"; }; done
    kill -KILL "${rank_pids[$victim]}"
    killed_at=$(date +%s%N)
    # Every other rank has ended when none is left but the victim (which wait reaps).
    for _ in $(seq 1 200); do
        alive=0
        for ((r = 0; r < ranks; r++)); do
            [ $r -eq $victim ] || ! kill -0 "${rank_pids[$r]}" 2>/dev/null || alive=$((alive + 1))
        done
        [ $alive -eq 0 ] && break
        sleep 0.05
    done
    ended_at=$(date +%s%N)
    elapsed_ms=$(((ended_at - killed_at) / 1000000))
    # When each said so: its output's last change (a rank writes nothing else before its message).
    named_ms=$(for ((r = 0; r < ranks; r++)); do [ $r -eq $victim ] || stat -c %.9Y "$out.$r"; done |
        awk -v at="$killed_at" '{ ms = ($1 * 1e9 - at) / 1e6; if (ms > most) most = ms } END { printf "%d", most }')
    echo "$transport: the last rank named it $named_ms ms after the kill, the last ended $elapsed_ms ms after it"
    [ $alive -eq 0 ] || { kill -KILL "${rank_pids[@]}" 2>/dev/null; fail "$transport: $alive ranks still running 10 s after the kill"; }
    unnamed=()
    for ((r = 0; r < ranks; r++)); do
        [ $r -eq $victim ] && { wait "${rank_pids[$r]}" || true; continue; }
        status=0
        wait "${rank_pids[$r]}" || status=$?
        [ $status -ne 0 ] || fail "$transport: rank $r exited 0 after rank $victim was killed"
        grep -q "rank $victim " "$out.$r" || unnamed+=($r)
    done
    [ ${#unnamed[@]} -eq 0 ] || { cat "$out.${unnamed[0]}"; fail "$transport: ranks ${unnamed[*]} do not name rank $victim"; }
    [ "$named_ms" -lt 2000 ] || fail "$transport: the last rank named rank $victim $named_ms ms after the kill (limit 2000 ms)"
    [ $elapsed_ms -lt 10000 ] || fail "$transport: the ranks took $elapsed_ms ms to end (limit 10 s)"
    echo "rank 0: $(grep -m1 stopping "$out.0")"
    pass "$transport: kill -9 of rank $victim of $ranks: the $((ranks - 1)) others named it within $named_ms ms and ended within $elapsed_ms ms"
done
