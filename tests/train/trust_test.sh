#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Another user of the node against a running job: a job's ranks run as one throwaway uid, the
# stranger (stranger.py) as another, who knows rank 0's port, the listeners in /proc/net/tcp
# and the names in /dev/shm, but not the step's secret. Each case fails where ranks trust
# anyone who greets like a rank: an impostor claiming rank 1, a squatter on rank 0's port, a
# forged failure notice, a caller that only beats, 1,100 connections held open (to the links
# and to the rendezvous while the ranks meet), and the
# shared-memory segments' names made before the ranks make them. Needs root (two uids).
#   usage: trust_test.sh [CASE...]   (impostor squatter notice heartbeats flood flood_rendezvous shm;
#                                     default all)
. "$(dirname "$0")/lib.sh"
BENCH="$TRELLIS_BUILD/trellis-bench"
STRANGER="$(cd "$(dirname "$0")" && pwd)/stranger.py"
if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null; then
    echo "SKIP: playing another user needs root and runuser"
    exit 77
fi
victim=trellis-victim stranger=trellis-stranger
for user in $victim $stranger; do
    # Another test may make it at the same moment: then useradd fails and the user exists.
    id "$user" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$user" 2>/dev/null || id "$user" >/dev/null ||
        fail "cannot make the test user $user"
done
victim_uid=$(id -u $victim)
# The two users are this test's alone: whatever of theirs is left when it ends goes with it.
trap 'pkill -KILL -u $victim; pkill -KILL -u $stranger; rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir "$work/v" && chown $victim "$work/v"  # the victim's logs
as_victim() { runuser -u $victim -- env OMP_NUM_THREADS=1 TRELLIS_SECRET="$TRELLIS_SECRET" "$@"; }
as_stranger() { runuser -u $stranger -- "$PYTHON3" "$STRANGER" "$@"; }

# rank R OF N PORT OUT ARGS...: one of the victim's ranks of trellis-bench, in the background.
rank() {
    local r=$1 n=$2 port=$3 out=$4
    shift 4
    TRELLIS_RANK=$r TRELLIS_WORLD_SIZE=$n TRELLIS_MASTER=127.0.0.1:$port as_victim "$BENCH" "$@" >"$out.$r" 2>&1 &
    rank_pids[$r]=$!
}
# going LOGDIR: waits until rank 0 has begun its log (every rank is then in the benchmark).
going() {
    for _ in $(seq 1 300); do grep -q '"kind":"run"' "$1/bench.jsonl" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
# all_alive OUT WHAT: every rank of the last job still runs; then they are stopped.
all_alive_then_stop() {
    local pid alive=1
    for pid in "${rank_pids[@]}"; do kill -0 "$pid" 2>/dev/null || alive=0; done
    # runuser waits for its child: the ranks themselves are stopped, as the victim's processes.
    pkill -TERM -u $victim
    wait "${rank_pids[@]}" 2>/dev/null
    [ $alive -eq 1 ] || { tail -n 3 "$1".*; fail "$2"; }
}

# The impostor: it calls rank 0 as rank 1 before the real rank 1 does.
impostor() {
port=$(free_port)
as_stranger impostor 127.0.0.1 "$port" 8 >"$work/impostor" 2>&1 &
stranger_pid=$!
rank_pids=()
rank 0 2 "$port" "$work/imp" allreduce --transport tcp --sizes 4K --iters 5 --comm-timeout 20
sleep 1.5
rank 1 2 "$port" "$work/imp" allreduce --transport tcp --sizes 4K --iters 5 --comm-timeout 20
wait_ranks "$work/imp" "a job whose rank 0 an impostor called first"
kill "$stranger_pid" 2>/dev/null; wait "$stranger_pid" 2>/dev/null
grep -q "rank 1\|forged" "$work/impostor" && { cat "$work/impostor"; fail "the impostor passed for rank 1"; }
grep -q "dropped" "$work/imp.0" || { cat "$work/imp.0"; fail "rank 0 did not log the impostor it dropped"; }
pass "an impostor claiming rank 1 is dropped (logged by rank 0); the real rank 1 joins and the sums are right"
}

# The squatter: it holds rank 0's port before rank 0 starts, and answers the ranks' calls.
squatter() {
port=$(free_port)
as_stranger squatter "$port" 3 >"$work/squatter" 2>&1 &
stranger_pid=$!
for _ in $(seq 1 50); do grep -q holding "$work/squatter" && break; sleep 0.1; done
rank_pids=()
for r in 0 1; do rank $r 2 "$port" "$work/squat" allreduce --transport tcp --sizes 4K --iters 5 --comm-timeout 20; done
wait_ranks "$work/squat" "a job whose rank 0's port a squatter held first"
wait "$stranger_pid" 2>/dev/null
grep -q "heard" "$work/squatter" && { cat "$work/squatter"; fail "a rank took the squatter for rank 0"; }
pass "a squatter on rank 0's port learns nothing and is waited out; the job then runs"
}

# The forged failure notice: it links to the ranks' listeners as each rank in turn (of 8 ranks,
# some pairs never link, so that a rank that trusts anyone would take the call).
notice() {
port=$(free_port)
rank_pids=()
for r in $(seq 0 7); do
    rank $r 8 "$port" "$work/notice" allreduce --transport tcp --sizes 4K --iters 100000000 --warmup 1 \
        --comm-timeout 20 --log-dir "$work/v/notice"
done
going "$work/v/notice" || { tail -n 3 "$work"/notice.*; fail "the 8-rank job did not get going"; }
as_stranger notice "$victim_uid" 8 8 >"$work/stranger.notice" 2>&1
grep -q "gpu-node-42" "$work"/notice.[0-7] && { cat "$work/stranger.notice"; fail "a rank repeated the forged notice"; }
all_alive_then_stop "$work/notice" "a rank stopped after the stranger's notice"
grep -q "linked\|answered" "$work/stranger.notice" && { cat "$work/stranger.notice"; fail "a rank linked to the stranger"; }
pass "a stranger cannot link to a rank, nor stop a job with a forged failure notice"
}

# A caller that only beats: with no real rank 1, rank 0 gives up at its timeout.
heartbeats() {
port=$(free_port)
as_stranger heartbeats 127.0.0.1 "$port" 25 >"$work/beats" 2>&1 &
stranger_pid=$!
rank_pids=()
started=$SECONDS
rank 0 2 "$port" "$work/beats" allreduce --transport tcp --sizes 4K --iters 5 --comm-timeout 5
wait "${rank_pids[0]}"
status=$?
took=$((SECONDS - started))
kill "$stranger_pid" 2>/dev/null; wait "$stranger_pid" 2>/dev/null
[ $status -ne 0 ] || fail "rank 0 succeeded alone"
[ $took -le 15 ] || { cat "$work/beats" "$work/beats.0"; fail "a caller that only beats held rank 0 for $took s (its timeout is 5 s)"; }
pass "a caller that only sends heartbeats does not hold a rank past its timeout ($took s)"
}

# 1,100 connections to each of the ranks' listeners, held open, by a user with descriptors to
# spare, against ranks with 1,024.
flood() {
port=$(free_port)
rank_pids=()
for r in 0 1; do
    TRELLIS_RANK=$r TRELLIS_WORLD_SIZE=2 TRELLIS_MASTER=127.0.0.1:$port runuser -u $victim -- bash -c \
        'ulimit -n 1024; exec env OMP_NUM_THREADS=1 "$@"' flood "$BENCH" allreduce --transport tcp --sizes 64K \
        --iters 100000000 --warmup 1 --comm-timeout 20 --log-dir "$work/v/flood" >"$work/flood.$r" 2>&1 &
    rank_pids[$r]=$!
done
going "$work/v/flood" || { tail -n 3 "$work"/flood.*; fail "the flooded job did not get going"; }
runuser -u $stranger -- bash -c 'ulimit -n 8192; exec "$@"' flood "$PYTHON3" "$STRANGER" flood "$victim_uid" 1100 6 \
    >"$work/stranger.flood" 2>&1
grep -q "holding [1-9]" "$work/stranger.flood" || { cat "$work/stranger.flood"; fail "the stranger held no connection"; }
all_alive_then_stop "$work/flood" "a rank stopped under $(cat "$work/stranger.flood")"
pass "a job keeps running while a stranger holds $(sed -n 's/holding \([0-9]*\).*/\1/p' "$work/stranger.flood") connections to its listeners"
}

# The same flood on rank 0's rendezvous port while the ranks meet: the real rank 1 gets in
# past the stranger's connections while they are still held.
flood_rendezvous() {
port=$(free_port)
rank_pids=()
rank 0 2 "$port" "$work/meet" allreduce --transport tcp --sizes 4K --iters 5 --comm-timeout 30
for _ in $(seq 1 100); do
    awk -v p="$(printf '%04X' "$port")" '$4 == "0A" && $2 ~ ":" p "$" {found = 1} END {exit !found}' /proc/net/tcp && break
    sleep 0.1
done
runuser -u $stranger -- bash -c 'ulimit -n 8192; exec "$@"' flood "$PYTHON3" "$STRANGER" flood "$victim_uid" 1100 15 "$port" \
    >"$work/stranger.meet" 2>&1 &
stranger_pid=$!
for _ in $(seq 1 100); do grep -q "holding" "$work/stranger.meet" && break; sleep 0.1; done
started=$SECONDS
rank 1 2 "$port" "$work/meet" allreduce --transport tcp --sizes 4K --iters 5 --comm-timeout 30
wait_ranks "$work/meet" "a job whose rendezvous port a stranger flooded"
took=$((SECONDS - started))
kill "$stranger_pid" 2>/dev/null; wait "$stranger_pid" 2>/dev/null
grep -q "holding [1-9]" "$work/stranger.meet" || { cat "$work/stranger.meet"; fail "the stranger held no connection"; }
[ $took -lt 12 ] || fail "rank 1 got through the stranger's connections only after $took s"
pass "rank 1 meets rank 0 in $took s past $(sed -n 's/holding \([0-9]*\).*/\1/p' "$work/stranger.meet") connections a stranger holds to the rendezvous port"
}

# The shared-memory segments: the stranger sees the first appear and makes the others' names
# (every rank but rank 0 makes its own half a second late, so that the stranger always could).
shm() {
port=$(free_port)
as_stranger shm 30 >"$work/stranger.shm" 2>&1 &
stranger_pid=$!
rank_pids=()
for r in $(seq 0 7); do
    TRELLIS_TEST_SHM_DELAY_MS=500 rank $r 8 "$port" "$work/shm" allreduce --transport shm --sizes 4K --iters 3 \
        --comm-timeout 30
done
wait_ranks "$work/shm" "8 shared-memory ranks while a stranger watched /dev/shm"
kill "$stranger_pid" 2>/dev/null; wait "$stranger_pid" 2>/dev/null
find /dev/shm -maxdepth 1 -user $stranger -delete
pass "8 shared-memory ranks start although a stranger watches /dev/shm (segment names only the step can tell)"
}

for one in ${*:-impostor squatter notice heartbeats flood flood_rendezvous shm}; do
    $one
done
