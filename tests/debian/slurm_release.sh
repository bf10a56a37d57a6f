#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Slurm suites against the Slurm of another Debian release, on this machine's cgroup v1 (and
# on cgroup v2 in a qemu guest): trellis's Debian packages are built in a root of that release
# (tests/debian/root.sh: debootstrap and apt-get, made once from the network and kept in
# /var/cache/trellis/RELEASE-slurm) against its libslurm-dev, oneDNN and Catch2, and installed
# there; tests/slurm's suites run inside the root, unchanged, with the installed plugin, each
# starting its cluster there with the root's slurmctld, slurmd and munged. All of it runs in a
# mount namespace of its own: the root's /proc, /sys (this machine's cgroup hierarchies, which
# slurmd needs), /dev (where the clusters' /dev/nvidiaN are made), /tmp and /run go away with
# it. The clusters in the root never meet the ones the other tests start on this machine: each
# has its own munged and ports. Before the suites, the oneDNN 3.7.2 fault that trellis-train's
# probe guards against is brought about on this CPU (tests/debian/onednn_sigfpe) and the
# installed trainer must train through it, or skip it with the probe's reason. The packages are
# purged from the root at the end.
#   tests/debian/slurm_release.sh RELEASE
#     trixie  Slurm 24.11 (Debian 13): every suite, then tests/cgroup2/slurm_v2_test.sh boots
#             the same root, packages installed, in a guest with cgroup v1 off and runs the GPU
#             matrix and the CPU allocation there on Slurm's cgroup/v2
#     sid     Slurm 26.05 (unstable): the GPU matrix, the CPU allocation and the plugin's suite
#   TRELLIS_DEBIAN_ROOT    another root (default /var/cache/trellis/RELEASE-slurm)
#   TRELLIS_DEBIAN_SUITES  the suites to run (default: the release's, above)
#   TRELLIS_DEBIAN_CGROUP2 0 leaves out the cgroup v2 guest
#   TRELLIS_DEBIAN_LAUNCH_RUNS  runs of tests/perf/slurm_launch there (default 12; 0: none)
#   TRELLIS_TESTS_END      when the tests must have ended (seconds since the epoch; scripts/test
#                          sets it): with less time left than the release takes, the test skips
# Skips (77) when not root, without debootstrap, chroot, unshare or flock, without git (the
# source tree is copied by its git file list), when the tests' time is too short, when the
# root must be made and the mirror cannot be reached, or when the mirror's Slurm is not the
# release's (the line names the versions it has).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
. "$src/tests/debian/root.sh"
release=${1:-}
case $release in
# minutes: what a cold root, the build, the suites (and the guest) took on 2 cores, the two
# releases side by side in make -j2 check (trixie 3 + 13.5 + 10, sid 3 + 11)
trixie) slurm=24.11 default_suites="gpu_test cpu_alloc_test frameworks_test slurm_test container_test apptainer_test train_test" cgroup2=1 minutes=30 ;;
sid) slurm=26.05 default_suites="gpu_test cpu_alloc_test slurm_test" cgroup2=0 minutes=15 ;;
*) echo "usage: $0 trixie|sid"; exit 2 ;;
esac
# The package list as words, none taken as a file pattern (slurm-wlm=26.05.* is apt's).
read -r -d '' -a packages <<<"$(debian_slurm_packages "$release")"
root=${TRELLIS_DEBIAN_ROOT:-$(debian_slurm_root "$release")}
# Where the packages are built, inside the root (the cgroup v2 guest takes its test programs there).
work_path=/opt/trellis-debian
build_path=$work_path/src/debian/build
suites=${TRELLIS_DEBIAN_SUITES:-$default_suites}

if [ "${2:-}" != --in-own-mount-namespace ]; then
    [ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, mounts, and the Slurm cluster)"
    for tool in debootstrap chroot unshare pivot_root flock git; do
        command -v "$tool" >/dev/null || skip "$tool is missing (scripts/install-deps installs it)"
    done
    git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || skip "$src is not a git checkout (its files are copied into the root by git ls-files)"
    # The tests' time (scripts/test sets TRELLIS_TESTS_END, in seconds since the epoch, so that
    # the benchmarks after make check keep their share): nothing is begun that cannot end in it.
    if [[ ${TRELLIS_TESTS_END:-} =~ ^[0-9]+$ ]]; then
        left=$(( (TRELLIS_TESTS_END - $(date +%s)) / 60 ))
        [ "$left" -ge "$minutes" ] ||
            skip "for time: $left min left of the tests' time (TRELLIS_TESTS_END), and the Debian $release root, the build and the suites on Slurm $slurm take about $minutes min"
    fi
    if ! debian_has "$release" "$root" "${packages[@]}"; then
        debian_mirror_reachable || skip "no Debian $release root in $root, and the mirror ${debian_mirror:-(none named by the apt sources here)} cannot be reached to make one"
        log=$(mktemp /tmp/trellis-debian-root.XXXXXX)
        debian_root "$release" "$root" "$log" "${packages[@]}"
        made=$?
        rm -f "$log"
        case $made in
        0) ;;
        2) skip "Slurm $slurm is not in the mirror's Debian $release (above): its suites are written for that release" ;;
        *) echo "FAIL: cannot make the Debian $release root $root"; exit 1 ;;
        esac
    fi
    # One run at a time per root: the packages are installed in it.
    exec 8>"$root.test-lock"
    flock 8
    unshare --mount --propagation private "$0" "$release" --in-own-mount-namespace
    status=$?
    if [ "${TRELLIS_DEBIAN_CGROUP2:-$cgroup2}" != 0 ] && [ -f "$root/$build_path/spank/.libs/spank_trellis.so" ]; then
        echo "== tests/cgroup2/slurm_v2_test.sh: the same root and packages on Slurm's cgroup/v2, in a guest"
        TRELLIS_DEBIAN13_ROOT=$root TRELLIS_DEBIAN13_BUILD=$build_path \
            TRELLIS_PLUGIN=$(cat "$root/$build_path/../installed-plugin" 2>/dev/null) "$src/tests/cgroup2/slurm_v2_test.sh"
        v2=$?
        echo "== tests/cgroup2/slurm_v2_test.sh: status $v2"
        case $v2 in 0) ;; 77) [ $status -ne 0 ] || status=77 ;; *) status=1 ;; esac
    fi
    chroot "$root" sh -c 'dpkg-query -W -f "\${Package}\n" "trellis-*" slurm-spank-trellis 2>/dev/null | xargs -r dpkg --purge' >/dev/null 2>&1
    rm -rf --one-file-system "${root:?}$work_path"
    exit $status
fi

began=$SECONDS
debian_mount "$root" || { echo "FAIL: cannot mount the root's file systems"; exit 1; }
# A fixed folder, so that the cgroup v2 guest that follows finds the build.
work=$root$work_path
rm -rf --one-file-system "$work" && mkdir -p "$work" || { echo "FAIL: cannot make $work"; exit 1; }
chmod 755 "$work"
inside=${work#"$root"}
# in_root COMMAND...: COMMAND in the root, with nothing of this machine's environment.
in_root() {
    debian_enter "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}
echo "Debian $release root $root: $(cat "$root/$debian_complete")"
# The Slurm as its slurmd names itself (read once: each in_root makes a mount namespace).
slurmd_version=$(in_root slurmd -V)
echo "$slurmd_version, $(in_root sh -c 'dpkg-query -W -f "\${Package} \${Version}\n" slurm-wlm libpmix2t64 libdnnl3.6 openmpi-bin python3-torch catch2 g++ 2>/dev/null | paste -sd, -')"

# build_trellis: trellis's Debian packages built in the root against its Slurm
# (dpkg-buildpackage, no CUDA there) from this checkout's files as they are (git ls-files), so
# that what is tested is what is being changed, then installed; sets $build (the dh build
# folder, inside the root: the suites take their test programs, built here too, from it) and
# $installed_plugin.
build_trellis() {
    local began=$SECONDS debs
    mkdir "$work/src" || { echo "FAIL: cannot make $work/src"; return 1; }
    git -C "$src" ls-files -z | (cd "$src" && tar --null -T - -cf -) | tar -C "$work/src" -xf -
    # Every step of the copy (a file git lists but the tree lacks is a failure of the middle one).
    [ "${PIPESTATUS[*]}" = "0 0 0" ] || { echo "FAIL: cannot copy the source tree into the root"; return 1; }
    # Without debug information (nothing here reads it; a quarter of the compile time), so no
    # dbgsym packages either.
    if ! in_root sh -c "cd '$inside/src' && DEB_BUILD_OPTIONS='nocheck noddebs parallel=2' DEB_CFLAGS_STRIP=-g DEB_CXXFLAGS_STRIP=-g \\
            nice -n 10 dpkg-buildpackage -b -us -uc -Pnocuda &&
            make -C debian/build -j2 tests/slurm/pmix_exchange tests/data/make_dataset" >"$work/build.log" 2>&1; then
        tail -n 40 "$work/build.log"
        echo "FAIL: trellis's packages do not build against $slurmd_version in the root (the build's output ends above)"
        return 1
    fi
    debs=$(cd "$work" && ls trellis-*_*.deb slurm-spank-trellis_*.deb | grep -v -- -dbgsym_ | sed "s|^|$inside/|")
    # shellcheck disable=SC2086  # the list is words
    in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $debs >"$work/install.log" 2>&1 ||
        { tail -n 20 "$work/install.log"; echo "FAIL: the packages do not install in the root"; return 1; }
    build=$inside/src/debian/build
    installed_plugin=$(in_root dpkg -L slurm-spank-trellis | grep '/spank_trellis\.so$')
    [ -n "$installed_plugin" ] || { echo "FAIL: the installed slurm-spank-trellis holds no spank_trellis.so"; return 1; }
    echo "$installed_plugin" >"$work/src/debian/installed-plugin"
    echo "ok: trellis's packages built and installed in the root in $((SECONDS - began)) s:" \
         "$(in_root dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' 'trellis-*' slurm-spank-trellis |
            awk '$1 == "ii" { print $2 " " $3 }' | paste -sd, -); the plugin depends on" \
         "$(in_root dpkg-query -W -f '${Depends}' slurm-spank-trellis | grep -o 'slurm-wlm-basic-plugins[^,]*' | paste -sd' ' -)"
}
build_trellis || exit 1

# oneDNN 3.7.2's SIGFPE (tests/debian/onednn_sigfpe), on every CPU: the root's oneDNN made to
# read its L1 cache as 1 byte, as it reads it on the AMD EPYC virtual machines where it dies.
# oneDNN's own channels-last convolution (the reproducer, as PyTorch asks for it) must die of it,
# else the stand-in no longer reaches the fault and the rest would prove nothing; the installed
# trellis-train, whose layers take the layouts oneDNN chooses, must then pass its probe and
# train ResNet-50 (whose 1x1 convolutions of 256 to 1024 channels are the ones that die) under it.
onednn_fault() {
    local began=$SECONDS status stand_in=/tmp/tiny_l1_cache.so reproducer=/tmp/onednn_reproducer dnnl
    dnnl=$(in_root sh -c 'dpkg-query -W -f "\${Package} \${Version}\n" "libdnnl*" 2>/dev/null | grep -v -- -dev | paste -sd, -')
    in_root g++ -shared -fPIC -O1 "$inside/src/tests/debian/onednn_sigfpe/tiny_l1_cache.cpp" -o "$stand_in" &&
        in_root g++ -std=c++17 -O1 "$inside/src/tests/debian/onednn_sigfpe/reproducer.cpp" -ldnnl -o "$reproducer" ||
        { echo "FAIL: cannot build the oneDNN cache stand-in or the reproducer in the root"; return 1; }
    in_root env LD_PRELOAD="$stand_in" "$reproducer" >"$work/onednn_fault.reproducer" 2>&1
    status=$?
    if [ $status -ne 136 ]; then  # 128 + SIGFPE
        echo "note: oneDNN's channels-last 1x1 convolution under a 1-byte L1 ended with status $status, not SIGFPE," \
             "with $dnnl: the fault is not reached; trellis not judged on it"
        return 0
    fi
    in_root env LD_PRELOAD="$stand_in" trellis-train --model resnet50 --batch-size 16 --steps 1 --threads 2 \
        >"$work/onednn_fault.out" 2>&1 && grep -q "^total images/sec" "$work/onednn_fault.out" ||
        { tail -n 5 "$work/onednn_fault.out"; echo "FAIL: trellis-train under the oneDNN fault's 1-byte L1 (oneDNN's own convolution dies of it)"; return 1; }
    echo "ok: $dnnl with its L1 read as 1 byte: its channels-last 1x1 convolution dies of SIGFPE, trellis-train's" \
         "probe passes and ResNet-50 trains ($((SECONDS - began)) s)"
}
onednn_fault || exit 1

# The installed trainer on this CPU as it is: one line that it trains, or, where the root's
# oneDNN dies here, the probe's refusal as the reason it is not judged.
. "$src/tests/train/onednn_fault.sh"
if refusal=$(onednn_fault_refusal in_root trellis-train); then
    echo "SKIP (the trainer, not a suite): $refusal"
else
    in_root trellis-train --model resnet8 --image-size 32 --batch-size 8 --steps 2 --threads 2 --data synthetic \
        >"$work/train.out" 2>&1 && rate=$(grep "^total images/sec" "$work/train.out") ||
        { tail -n 5 "$work/train.out"; echo "FAIL: the installed trellis-train in the Debian $release root"; exit 1; }
    echo "ok: the installed trellis-train trains ResNet-8 on the CPU ($rate)"
fi

failed=() passed=() skipped=()
for suite in $suites; do
    began_suite=$SECONDS
    echo "== tests/slurm/$suite.sh on $slurmd_version"
    in_root TRELLIS_BUILD="$build" TRELLIS_PLUGIN="$installed_plugin" TRELLIS_TOPO="$build/trellis-topo" \
        TRELLIS_FIXTURES="$inside/src/tests/fixtures" \
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
# The plugin's launch cost on this Slurm (a figure for the record, not judged here: tests/perf runs
# the same benchmark on this machine's Slurm).
if [ "${TRELLIS_DEBIAN_LAUNCH_RUNS:-12}" -gt 0 ]; then
    echo "== tests/perf/slurm_launch on $slurmd_version, the installed plugin"
    in_root TRELLIS_PLUGIN="$installed_plugin" PYTHON3=python3 \
        "$inside/src/tests/perf/slurm_launch" "$build" "$inside/src" "${TRELLIS_DEBIAN_LAUNCH_RUNS:-12}" 2>&1
fi
echo "Slurm $slurm in the Debian $release root, $((SECONDS - began)) s in all:"
echo "  passed: ${passed[*]:-none}"
echo "  skipped: ${skipped[*]:-none}"
echo "  failed: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ] || exit 1
[ ${#passed[@]} -gt 0 ] || exit 77
exit 0
