#!/bin/bash
# The Slurm suites against Slurm 24.11 (Debian 13) on this machine's cgroup v1: trellis is built
# in a Debian 13 root (tests/debian13/root.sh: debootstrap and apt-get, made once from the
# network and kept in /var/cache/trellis/trixie-slurm) against its libslurm-dev, and
# tests/slurm's suites run inside the root, unchanged, each starting its cluster there with the
# root's slurmctld and slurmd 24.11, munged and PyTorch 2.6, Open MPI 5 and PMIx 5. All of it
# runs in a mount namespace of its own: the root's /proc, /sys (this machine's cgroup
# hierarchies, which slurmd 24.11 needs), /dev (where the clusters' /dev/nvidiaN are made),
# /tmp and /run go away with the test. The clusters in the root never meet the ones the
# other tests start on this machine: each has its own munged and ports.
#   TRELLIS_DEBIAN13_ROOT    another root (default /var/cache/trellis/trixie-slurm)
#   TRELLIS_DEBIAN13_SUITES  the suites to run (default: all of those below)
# Skips (77) when not root, without debootstrap, chroot, unshare or flock, without git (the
# source tree is copied by its git file list), or when the root must be made and
# deb.debian.org cannot be reached.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
. "$src/tests/debian13/root.sh"
root=${TRELLIS_DEBIAN13_ROOT:-$debian13_slurm_root}
suites=${TRELLIS_DEBIAN13_SUITES:-gpu_test cpu_alloc_test frameworks_test slurm_test container_test train_test}

if [ "${1:-}" != --in-own-mount-namespace ]; then
    [ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, mounts, and the Slurm cluster)"
    for tool in debootstrap chroot unshare pivot_root flock git; do
        command -v "$tool" >/dev/null || skip "$tool is missing (scripts/install-deps installs it)"
    done
    git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || skip "$src is not a git checkout (its files are copied into the root by git ls-files)"
    if [ ! -f "$root/$debian13_complete" ]; then
        host=${debian13_mirror#*://} host=${host%%/*}
        timeout 10 bash -c "exec 3<>/dev/tcp/$host/80" 2>/dev/null ||
            skip "no Debian 13 root in $root, and $host cannot be reached to make one"
        log=$(mktemp /tmp/trellis-debian13-root.XXXXXX)
        # shellcheck disable=SC2086  # the list is words
        debian13_root "$root" "$log" $debian13_slurm_packages || { rm -f "$log"; echo "FAIL: cannot make the Debian 13 root $root"; exit 1; }
        rm -f "$log"
    fi
    exec unshare --mount --propagation private "$0" --in-own-mount-namespace
fi

began=$SECONDS
debian13_mount "$root" || { echo "FAIL: cannot mount the root's file systems"; exit 1; }
work=$(mktemp -d "$root/opt/trellis-slurm2411.XXXXXX") || { echo "FAIL: cannot make a folder in $root/opt"; exit 1; }
chmod 755 "$work"
trap 'rm -rf --one-file-system "$work"' EXIT
inside=${work#"$root"}
# in_root COMMAND...: COMMAND in the root, with nothing of this machine's environment.
in_root() {
    debian13_enter "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}
echo "Debian 13 root $root: $(cat "$root/$debian13_complete")"
echo "$(in_root slurmd -V), $(in_root sh -c 'dpkg-query -W -f "\${Package} \${Version}\n" libpmix2t64 openmpi-bin python3-torch catch2 g++ 2>/dev/null | paste -sd, -')"

# build_trellis: trellis built in the root against its Slurm, in $inside/src; sets $build (the
# path inside the root). The tree is this checkout's files as they are (git ls-files), so that
# what is tested is what is being changed. One step, to be replaced by building and installing
# the Debian packages (dpkg-buildpackage) once debian/ is in the tree.
build_trellis() {
    local began=$SECONDS
    mkdir "$work/src" && git -C "$src" ls-files -z | (cd "$src" && tar --null -T - -cf -) | tar -C "$work/src" -xf - ||
        { echo "FAIL: cannot copy the source tree into the root"; return 1; }
    if ! in_root sh -c "cd '$inside/src' && ./bootstrap && ./configure ${TRELLIS_DEBIAN13_CONFIGURE:---without-trainer} &&
            nice -n 10 make -j2 && nice -n 10 make -j2 tests/slurm/pmix_exchange" >"$work/build.log" 2>&1; then
        tail -n 40 "$work/build.log"
        echo "FAIL: trellis does not build against $(in_root slurmd -V) in the root (the build's output ends above)"
        return 1
    fi
    build=$inside/src
    echo "ok: trellis built in the root in $((SECONDS - began)) s ($(grep -m1 'checking whether to build the trainer' "$work/build.log"))"
}
build_trellis || exit 1

failed=() passed=() skipped=()
for suite in $suites; do
    began_suite=$SECONDS
    echo "== tests/slurm/$suite.sh on $(in_root slurmd -V)"
    in_root TRELLIS_BUILD="$build" TRELLIS_TOPO="$build/trellis-topo" TRELLIS_FIXTURES="$inside/src/tests/fixtures" \
        TRELLIS_CUDA_MODULE="$build/.libs/trellis-cuda.so" PYTHON3=python3 \
        "$inside/src/tests/slurm/$suite.sh" 2>&1
    status=$?
    took=$((SECONDS - began_suite))
    case $status in
    0) passed+=("$suite (${took} s)") ;;
    77) skipped+=("$suite (${took} s)") ;;
    *) failed+=("$suite (status $status, ${took} s)") ;;
    esac
    echo "== tests/slurm/$suite.sh: status $status in $took s"
done
echo "Slurm 24.11 in the Debian 13 root, $((SECONDS - began)) s in all:"
echo "  passed: ${passed[*]:-none}"
echo "  skipped: ${skipped[*]:-none}"
echo "  failed: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ] || exit 1
[ ${#passed[@]} -gt 0 ] || exit 77
exit 0
