#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-bundle's bundle runs on a machine that did not build it: in a Debian 13 minbase
# root (a newer glibc and libstdc++ and none of the trainer's libraries, as on the GPU
# machine's Ubuntu), unpacked where nobody built it and run from another folder without
# LD_LIBRARY_PATH, trellis-train trains on the CPU and finds the bundle's CUDA module, and
# ldd finds every library of the programs and all but CUDA's of the module. The root is made
# once by debootstrap (from the network) and kept in /var/cache/trellis for later runs.
# Skips (77) when not root, without debootstrap or chroot, without the trainer, or when the
# root must be made and the mirror cannot be reached.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (debootstrap, chroot, mounts)"; exit 77; }
for tool in debootstrap chroot unshare flock; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is missing (scripts/install-deps installs it)"; exit 77; }
done
[ -x "$TRELLIS_BUILD/trellis-train" ] || { echo "SKIP: the trainer was not built (no $TRELLIS_BUILD/trellis-train)"; exit 77; }

# The rest runs in a mount namespace of its own: what debootstrap and this test mount in the
# root goes away with the test, however it ends, and is never seen by the rest of the machine.
if [ "${1:-}" != --in-own-mount-namespace ]; then
    exec unshare --mount --propagation private "$0" --in-own-mount-namespace
fi

fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "ok: $*"; }
limit=$((16 * 1024 * 1024))
cache=/var/cache/trellis
root=$cache/trixie-minbase
work=$(mktemp -d /tmp/trellis-bundle-test.XXXXXX)
unpacked=
trap 'rm -rf "$work" ${unpacked:+"$unpacked"}' EXIT

start=$SECONDS
"$src/scripts/gpu-bundle" "$TRELLIS_BUILD" "$work/trellis-gpu.tar.xz" >"$work/bundle.out" 2>&1 ||
    { cat "$work/bundle.out"; fail "scripts/gpu-bundle failed"; }
cat "$work/bundle.out"
size=$(stat -c %s "$work/trellis-gpu.tar.xz")
[ "$size" -le $limit ] || fail "the bundle is $size bytes, over $limit"
pass "the bundle is $size bytes (at most $limit), made in $((SECONDS - start)) s"

# The root, made once (tests/debian/root.sh: debootstrap, renamed into place when whole,
# flock'd so that tests side by side share it).
. "$src/tests/debian/root.sh"
debian_has trixie "$root" || debian_mirror_reachable ||
    { echo "SKIP: no Debian 13 root in $root, and the mirror ${debian_mirror:-(none named by the apt sources here)} cannot be reached to make one"; exit 77; }
debian_root trixie "$root" "$work/debootstrap.out" || fail "cannot make the Debian 13 root $root"

unpacked=$(mktemp -d "$root/opt/trellis-bundle-test.XXXXXX") || fail "cannot make a folder in $root/opt"
mkdir "$unpacked/bundle" "$unpacked/run"
tar -C "$unpacked/bundle" -xJf "$work/trellis-gpu.tar.xz" || fail "cannot unpack the bundle"
bundle=${unpacked#"$root"}/bundle
mount -t proc proc "$root/proc" || fail "cannot mount /proc in $root"
mount --bind /sys "$root/sys" || fail "cannot bind /sys into $root"
# in_root COMMAND...: runs COMMAND in the root, from a folder that is not the bundle's, with
# nothing of this machine's environment (no LD_LIBRARY_PATH, no TRELLIS_*).
in_root() { chroot "$root" /usr/bin/env -i -C "${unpacked#"$root"}/run" PATH=/usr/bin:/bin HOME=/root "$@"; }

in_root "$bundle/bin/trellis-train" --model resnet8 --image-size 32 --batch-size 4 --steps 2 --data synthetic \
    >"$work/train.out" 2>&1 || { cat "$work/train.out"; fail "trellis-train failed in the Debian 13 root"; }
rate=$(grep '^total images/sec: ' "$work/train.out") ||
    { cat "$work/train.out"; fail "trellis-train printed no \"total images/sec\" line in the Debian 13 root"; }
pass "bin/trellis-train trains resnet8 on the CPU in the Debian 13 root ($rate)"

# not_found LDD_OUTPUT: the libraries ldd did not find, and the bundle's own libraries that
# it found elsewhere than in the bundle (a missing or wrong RUNPATH that the root's own copy
# would hide). ldd shows $ORIGIN's paths as they are, bin/../lib/...
not_found() {
    local soname arrow path
    while read -r soname arrow path _; do
        [ "$arrow" = "=>" ] || continue
        if [ "$path" = "not" ]; then
            echo "$soname"
        elif [ -e "$root$bundle/lib/$soname" ] && [ "$(realpath -ms "$path")" != "$bundle/lib/$soname" ]; then
            echo "$soname (found at $path, not in the bundle)"
        fi
    done <"$1"
}
for program in "$root$bundle"/bin/*; do
    name=bin/${program##*/}
    in_root ldd "$bundle/$name" >"$work/ldd.out" 2>&1 || { cat "$work/ldd.out"; fail "ldd $name failed in the root"; }
    missing=$(not_found "$work/ldd.out")
    [ -z "$missing" ] || { cat "$work/ldd.out"; fail "$name: libraries not found in the root: $missing"; }
    pass "$name: ldd finds its $(grep -c '=>' "$work/ldd.out") libraries in the root, the bundle's in lib/"
done

module=lib/trellis/trellis-cuda.so
if [ -f "$root$bundle/$module" ]; then
    in_root ldd "$bundle/$module" >"$work/ldd.out" 2>&1 || { cat "$work/ldd.out"; fail "ldd $module failed in the root"; }
    # The GPU machine brings CUDA's libraries; the root has none.
    missing=$(not_found "$work/ldd.out" | grep -v -E '^lib(cuda|cudnn|cublas|cublasLt|nccl)[._]')
    [ -z "$missing" ] || { cat "$work/ldd.out"; fail "$module: libraries not found in the root: $missing"; }
    pass "$module: ldd finds every library it needs but CUDA's"
    # Without a GPU or CUDA's libraries the CUDA run fails, but on the missing library, not
    # for want of the module (then it names the trellis-cuda.so paths it tried).
    in_root "$bundle/bin/trellis-train" --device cuda --model resnet8 --batch-size 2 --steps 1 >"$work/cuda.out" 2>&1 &&
        { cat "$work/cuda.out"; fail "trellis-train --device cuda succeeded in a root without CUDA"; }
    grep -q -E "no CUDA backend|no trellis-cuda.so" "$work/cuda.out" &&
        { cat "$work/cuda.out"; fail "bin/trellis-train does not find the bundle's $module"; }
    pass "bin/trellis-train finds $module (and stops: $(head -n 1 "$work/cuda.out"))"
    # The module takes the trainer's own functions from the program that loads it
    # (-export-dynamic): each program that opens the GPU must define, stripped, every one the
    # module needs, or dlopen fails on the GPU machine alone.
    nm -D --undefined-only "$root$bundle/$module" | awk '$2 ~ /^_ZN7trellis/ {print $2}' | sort -u >"$work/wanted"
    for name in trellis-train layers_test; do
        nm -D --defined-only "$root$bundle/bin/$name" | awk '{print $3}' | sort -u >"$work/given"
        lacking=$(comm -23 "$work/wanted" "$work/given")
        [ -z "$lacking" ] || fail "bin/$name lacks what $module takes from it: $(echo "$lacking" | c++filt | head -n 5)"
    done
    pass "bin/trellis-train and bin/layers_test define the $(wc -l <"$work/wanted") trainer functions $module takes from them"
else
    echo "note: this build has no CUDA module (configure found no CUDA): the bundle has none to check"
fi
pass "the bundle runs in a Debian 13 root ($((SECONDS - start)) s in all)"
