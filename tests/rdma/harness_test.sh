#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The soft-RoCE VM harness works: the VM boots this machine's kernel, soft-RoCE comes up, and
# an RC queue pair between two processes on rxe0 carries traffic (ibv_rc_pingpong from
# rdma-core's ibverbs-utils). The verbs transport's tests run in the same VM. Skips (77)
# where qemu, the kernel package or busybox-static are missing, or when not root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (qemu's 9p share of / and module loading)"; exit 77; }
command -v ibv_rc_pingpong >/dev/null || { echo "SKIP: ibv_rc_pingpong missing (apt-get install ibverbs-utils)"; exit 77; }
work=$(mktemp -d /tmp/trellis-rdma.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/script" <<SCRIPT
. "$here/rxe_setup.sh"
ibv_devinfo -d rxe0 | grep -E "state|link_layer"
ibv_rc_pingpong -d rxe0 -g 1 -n 100 >/tmp/server.out 2>&1 &
server=\$!
# The emulated VM is slow, the more so beside other tests: the server may take seconds to
# listen, and a client that finds nobody tries again.
for attempt in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
    sleep 1
    ibv_rc_pingpong -d rxe0 -g 1 -n 100 127.0.0.1 >/tmp/client.out 2>&1 && break
    grep -q "Couldn't connect" /tmp/client.out || { cat /tmp/client.out; exit 1; }
done
cat /tmp/client.out
wait \$server || { cat /tmp/server.out; exit 1; }
echo "rc pingpong over rxe0: ok"
SCRIPT
"$here/vm" run "$work" "$work/script"
status=$?
[ $status -eq 77 ] && exit 77
[ $status -eq 0 ] || { echo "FAIL: the VM script failed (status $status)"; exit 1; }
