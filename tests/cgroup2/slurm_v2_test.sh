#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Slurm 24.11 on cgroup v2, in a qemu guest (tests/cgroup2/vm): this machine's cgroup v1
# mounts are fatal to Slurm's cgroup/v2, so a guest boots this machine's kernel with cgroup v1
# off and a Debian 13 root holding Slurm 24.11 and a trellis built against it. Inside, the
# Slurm suites of tests/slurm run on tests/slurm/cluster with cgroup/v2 (eBPF device control,
# IgnoreSystemd, EnableControllers): this tree's gpu_test.sh (the GPU matrix, with the rows of
# the options Slurm 23.11 hands on anew) and cpu_alloc_test.sh. Every row is printed; the test
# fails on a wrong one.
#   TRELLIS_DEBIAN13_ROOT   the root (e.g. made by debootstrap, slurm-wlm and the build
#                           dependencies installed)
#   TRELLIS_DEBIAN13_BUILD  trellis's build folder inside it (default /root/trellis: configure
#                           --without-trainer && make there)
#   TRELLIS_VM_TIMEOUT      the guest's time limit in seconds (default 900)
#   TRELLIS_CGROUP2_SUITES  the suites to run, under tests/ (default: slurm/gpu_test.sh
#                           slurm/cpu_alloc_test.sh)
# Skips (77) with the reason when not root, without qemu, the kernel or busybox, or without the
# root or the build in it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tests=$(cd "$here/.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (qemu's 9p share of the root, Slurm's daemons)"
root=${TRELLIS_DEBIAN13_ROOT:-}
[ -n "$root" ] || skip "TRELLIS_DEBIAN13_ROOT is not set (a Debian 13 root with Slurm 24.11 and trellis built in it)"
[ -d "$root" ] || skip "TRELLIS_DEBIAN13_ROOT=$root is not a folder"
build=${TRELLIS_DEBIAN13_BUILD:-/root/trellis}
[ -f "$root$build/spank/.libs/spank_trellis.so" ] || skip "no trellis built in $root$build (TRELLIS_DEBIAN13_BUILD)"
for tool in slurmd slurmctld; do
    [ -x "$root/usr/sbin/$tool" ] || skip "no $tool in $root (apt-get install slurm-wlm)"
done

work=$(mktemp -d /tmp/trellis-cgroup2.XXXXXX)
trap 'rm -rf "$work"' EXIT
# This tree's tests travel in the guest's share (/run/results): the build in the root may be
# of another commit, the suites are this one's.
mkdir -p "$work/share/tests/fixtures"
cp -r "$tests/slurm" "$tests/cgroup2" "$tests/free_port.py" "$work/share/tests/"
cp -r "$tests/fixtures/topology" "$work/share/tests/fixtures/"
cat >"$work/script" <<SCRIPT
# Jobs run as an unprivileged user who must reach the plugin and trellis-topo in the build.
dir=$build
while [ "\$dir" != / ]; do chmod o+rx "\$dir"; dir=\$(dirname "\$dir"); done
export TRELLIS_BUILD=$build TRELLIS_FIXTURES=/run/results/tests/fixtures${TRELLIS_PLUGIN:+ TRELLIS_PLUGIN=$TRELLIS_PLUGIN}
# The GPU options' rows of gpu_test.sh, not the rest (NICs, nested steps, the agent): those do
# not depend on the cgroup version, and each step is slow under emulation.
export TRELLIS_GPU_MATRIX_ONLY=\${TRELLIS_GPU_MATRIX_ONLY:-1}
echo "guest: \$(uname -r), \$(cat /proc/self/cgroup), controllers: \$(cat /sys/fs/cgroup/cgroup.controllers)"
echo "guest: \$(slurmd -V), up \$(cut -d' ' -f1 /proc/uptime) s"
failures=0
for suite in ${TRELLIS_CGROUP2_SUITES:-slurm/gpu_test.sh slurm/cpu_alloc_test.sh}; do
    start=\$(date +%s)
    bash /run/results/tests/\$suite >/tmp/suite.out 2>&1
    status=\$?
    grep -E "^(ok|FAIL|SKIP|  |cluster up)" /tmp/suite.out | sed "s|^|\$suite: |"
    [ \$status -eq 0 ] || { failures=\$((failures + 1)); tail -n 25 /tmp/suite.out | sed "s|^|\$suite (end): |"; }
    echo "suite \$suite: status \$status in \$((\$(date +%s) - start)) s"
done
exit \$((failures > 0))
SCRIPT
TRELLIS_VM_TIMEOUT=${TRELLIS_VM_TIMEOUT:-900} "$here/vm" "$root" "$work" "$work/script"
status=$?
[ $status -eq 77 ] && exit 77
[ $status -eq 0 ] || { echo "FAIL: Slurm 24.11 on cgroup v2 in the guest (status $status)"; exit 1; }
