#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The verbs transport over soft-RoCE in the VM (tests/rdma/vm): trellis-bench p2p, allreduce
# (3 ranks in a ring, 4 ranks halving-doubling, sums checked) and ps over RC queue pairs on rxe0; 2-rank training over verbs gives
# the same losses as over TCP; kill -9 of a rank is named by the other within 10 s. Skips (77)
# like harness_test.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${TRELLIS_BUILD:?}
[ -x "$build/trellis-train" ] || { echo "SKIP: trellis-train is not built (configure --without-trainer)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (qemu's 9p share of / and module loading)"; exit 77; }
work=$(mktemp -d /tmp/trellis-verbs.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/script" <<SCRIPT
. "$here/rxe_setup.sh"
export TRELLIS_HCA=rxe0
TRELLIS_SECRET=\$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')
export TRELLIS_SECRET
B="$build"
failures=0
fail() { echo "FAIL: \$*"; failures=\$((failures + 1)); }
ranks() {  # N OUT COMMAND...: N ranks with the plain-environment wireup at a free port; waits for all
    local n=\$1 out=\$2 status=0 port
    shift 2
    port=\$(python3 "$here/../free_port.py")
    for ((r = 0; r < n; r++)); do
        TRELLIS_RANK=\$r TRELLIS_WORLD_SIZE=\$n TRELLIS_MASTER=127.0.0.1:\$port timeout 300 "\$@" >"\$out.\$r" 2>&1 &
    done
    for job in \$(jobs -p); do wait \$job || status=1; done
    return \$status
}
ranks 2 /tmp/p2p \$B/trellis-bench p2p --transport verbs --sizes 8,64K,1M --iters 5 --json ||
    fail "p2p over verbs: \$(cat /tmp/p2p.*)"
[ "\$(grep -c '"transport":"verbs"' /tmp/p2p.0)" -eq 3 ] && echo "ok: p2p over verbs" || fail "p2p output: \$(cat /tmp/p2p.0)"
ranks 3 /tmp/ar \$B/trellis-bench allreduce --transport verbs --sizes 4K,1M,3M --iters 3 ||
    fail "allreduce over verbs: \$(cat /tmp/ar.*)"
[ "\$(grep -cE '^ +[0-9]+ +[0-9]+ .* 0$' /tmp/ar.0)" -eq 3 ] && echo "ok: allreduce over verbs, 3 ranks, sums right" ||
    fail "allreduce output: \$(cat /tmp/ar.0)"
ranks 4 /tmp/hd \$B/trellis-bench allreduce --transport verbs --allreduce-algorithm halving-doubling --sizes 4K,1M,3M --iters 3 ||
    fail "halving-doubling allreduce over verbs: \$(cat /tmp/hd.*)"
grep -q "halving-doubling" /tmp/hd.0 && [ "\$(grep -cE '^ +[0-9]+ +[0-9]+ .* 0$' /tmp/hd.0)" -eq 3 ] &&
    echo "ok: halving-doubling allreduce over verbs, 4 ranks, sums right" || fail "halving-doubling output: \$(cat /tmp/hd.0)"
ranks 3 /tmp/ps \$B/trellis-bench ps --transport verbs --sizes 64K,1M --iters 3 ||
    fail "ps over verbs: \$(cat /tmp/ps.*)"
echo "ok: ps over verbs"

common="--model resnet8 --batch-size 8 --steps 3 --threads 1 --display-every 1 --deterministic"
ranks 2 /tmp/tcp \$B/trellis-train \$common --transport tcp || fail "training over tcp: \$(tail -n 3 /tmp/tcp.*)"
ranks 2 /tmp/verbs \$B/trellis-train \$common --transport verbs || fail "training over verbs: \$(tail -n 3 /tmp/verbs.*)"
grep -q "allreduce over verbs" /tmp/verbs.0 || fail "training did not use verbs: \$(head -n 8 /tmp/verbs.0)"
losses() { awk -F'\t' '/^[0-9]+\timages/ {print \$1, \$3}' "\$1"; }
[ -n "\$(losses /tmp/tcp.0)" ] && [ "\$(losses /tmp/tcp.0)" = "\$(losses /tmp/verbs.0)" ] &&
    echo "ok: 2-rank training over verbs has the losses of TCP" || fail "losses differ: \$(losses /tmp/tcp.0) / \$(losses /tmp/verbs.0)"

port=\$(python3 "$here/../free_port.py")
for r in 0 1; do
    TRELLIS_RANK=\$r TRELLIS_WORLD_SIZE=2 TRELLIS_MASTER=127.0.0.1:\$port \$B/trellis-train --model resnet8 --batch-size 8 \
        --steps 100000 --threads 1 --display-every 1 --transport verbs >/tmp/kill.\$r 2>&1 &
    eval pid\$r=\$!
done
for _ in \$(seq 1 600); do grep -q "^2	" /tmp/kill.0 2>/dev/null && break; sleep 0.1; done
kill -9 \$pid1
start=\$(date +%s)
wait \$pid0
status=\$?
elapsed=\$((\$(date +%s) - start))
if [ \$status -ne 0 ] && [ \$elapsed -le 10 ] && grep -q "stopping: rank 1 " /tmp/kill.0; then
    echo "ok: kill -9 of rank 1 over verbs: rank 0 stopped in \$elapsed s naming it"
else
    fail "kill over verbs: status \$status after \$elapsed s: \$(tail -n 2 /tmp/kill.0)"
fi
exit \$((failures > 0))
SCRIPT
"$here/vm" run "$work" "$work/script"
status=$?
[ $status -eq 77 ] && exit 77
[ $status -eq 0 ] || { echo "FAIL: verbs tests in the VM (status $status)"; exit 1; }
