#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# GPUs through CDI in container steps under a real Slurm (tests/slurm/cluster), as the
# cluster's unprivileged user: a root-owned cdi_dirs folder holds a spec shaped like
# nvidia-ctk's (tests/fixtures/cdi/nvidia-ctk.yaml) for n1's fake GPUs (/dev/nvidiaN made with
# mknod; minors in PCI order there) and a fake driver library (libcuda.so.999.99, soname
# libcuda.so.1, built here with gcc). A --gpus-per-task=1 step of 2 tasks (Slurm then confines
# each task to its own GPU) in a bundle image: each task opens its own GPU's device node
# (ENXIO: no driver) but not the other task's (EPERM: its device cgroup), the GPUs the step
# was not given are not in the container at all, the image's own ldconfig -p lists
# libcuda.so.1 (the update-ldcache hook's cache) and so does the host's ldconfig -p -C on the
# container's cache, read through a task's /proc/PID/root; the
# create-symlinks hook's libcuda.so link is there, NVIDIA_VISIBLE_DEVICES=void comes from the
# spec, and the verbose report names the nvidia-ctk hooks trellis skips. A spec with a hook
# unknown to trellis stops the step, naming it. Without any spec, a GPU step on two nodes says
# once per node that no driver library was injected. Skips (77) without root, Slurm, munge,
# user namespaces, gcc, the cgroup devices controller, or fuse-overlayfs and /dev/fuse (the
# driver's files go into a writable layer over the image).
set -u
. "$(dirname "$0")/harness.sh"
fixtures=${TRELLIS_FIXTURES:?}/topology
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the test cluster needs root"; exit 77; }
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] || { echo "SKIP: no user namespaces"; exit 77; }
for tool in gcc fuse-overlayfs busybox; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps)"; exit 77; }
done
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
[ -x /sbin/ldconfig ] && ldd /sbin/ldconfig 2>&1 | grep -q "statically linked\|not a dynamic executable" ||
    { echo "SKIP: no static /sbin/ldconfig to put in the test image"; exit 77; }

make_cluster_dir trellis-slurm-cdi
"$here/../container/make_bundle" "$dir/bundle" >/dev/null || exit $?
install -D -m 0755 /sbin/ldconfig "$dir/bundle/rootfs/sbin/ldconfig" && ln -s busybox "$dir/bundle/rootfs/bin/sed"
# The fake driver: a library with the soname CUDA programs load, root's, outside the image.
mkdir -p "$dir/driver" "$dir/cdi" "$dir/no-cdi"
echo 'int cuInit(unsigned flags) { return (int)flags; }' >"$dir/driver/libcuda.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$dir/driver/libcuda.so.999.99" "$dir/driver/libcuda.c" ||
    { echo "FAIL: cannot build the fake libcuda"; exit 1; }
chmod 755 "$dir/driver" "$dir/cdi" "$dir/no-cdi" && chmod 644 "$dir/driver/libcuda.so.999.99"
lib=/usr/lib/x86_64-linux-gnu
hook=/usr/bin/nvidia-cdi-hook
# spec FILE [EXTRA-HOOK-PATH]: n1's four GPUs by index, as nvidia-ctk cdi generate writes them.
spec() {
    {
        echo "cdiVersion: 0.5.0"
        echo "kind: nvidia.com/gpu"
        echo "devices:"
        for k in 0 1 2 3; do
            printf -- '- name: "%d"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%d\n' $k $k
        done
        cat <<YAML
containerEdits:
  env:
  - NVIDIA_VISIBLE_DEVICES=void
  - NVIDIA_CTK_LIBCUDA_DIR=$lib
  deviceNodes:
  - path: /dev/nvidiactl
  hooks:
  - hookName: createContainer
    path: $hook
    args: [nvidia-cdi-hook, enable-cuda-compat, --host-driver-version=999.99]
  - hookName: createContainer
    path: $hook
    args: [nvidia-cdi-hook, create-symlinks, --link, "libcuda.so.1::$lib/libcuda.so"]
  - hookName: createContainer
    path: $hook
    args: [nvidia-cdi-hook, update-ldcache, --folder, $lib]
  - hookName: createContainer
    path: $hook
    args: [nvidia-cdi-hook, disable-device-node-modification]
YAML
        [ -z "${2:-}" ] || printf '  - hookName: createContainer\n    path: %s\n    args: [site-hook]\n' "$2"
        cat <<YAML
  mounts:
  - hostPath: $dir/driver/libcuda.so.999.99
    containerPath: $lib/libcuda.so.999.99
    options: [ro, nosuid, nodev, rbind, rprivate]
YAML
    } >"$1"
    chmod 644 "$1"
}
spec "$dir/cdi/nvidia.yaml"
cat >"$dir/trellis.toml" <<TOML
[binding]
policy = "closest"
[container]
allowed_images = ["$dir/bundle"]
cdi_dirs = ["$dir/cdi"]
agent = "$build/trellis-agent"
TOML
start_cluster "n1=$fixtures/shared-hca-4gpu.xml" "n2=$fixtures/two-level-switch-8gpu.xml"
if [ -f "$dir/no-device-cgroup" ]; then
    echo "SKIP: $(cat "$dir/no-device-cgroup")"
    exit 77
fi
image=(--trellis-image="$dir/bundle")

# 1. The spec's edits in a step of 2 tasks with a GPU each on n1 (minor N is GPU N there).
as_user_srun gpus -N1 -w n1 -n2 --gpus-per-task=1 --trellis-verbose "${image[@]}" sh -c '
    for d in /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3; do
        r=$(cat $d 2>&1 >/dev/null); echo "task=$SLURM_LOCALID gpu=$TRELLIS_GPU $d: ${r##*: }"
    done
    echo "task=$SLURM_LOCALID visible=$NVIDIA_VISIBLE_DEVICES ctl=$(ls /dev/nvidiactl)"
    echo "task=$SLURM_LOCALID link=$(readlink '$lib'/libcuda.so)"
    /sbin/ldconfig -p | grep libcuda | sed "s/^[[:space:]]*/task=$SLURM_LOCALID ldconfig: /"'
rc=$?
cat "$dir/gpus.out"
[ $rc -eq 0 ] || fail "the CDI step: status $rc: $(cat "$dir/gpus.err")"
own=0 other=0 absent=0
gpus=$(sed -n 's/^task=\([01]\) gpu=\([0-9]*\) .*/\2/p' "$dir/gpus.out" | sort -u | tr '\n' ' ')
for task in 0 1; do
    mine=$(sed -n "s/^task=$task gpu=\([0-9]*\) .*/\1/p" "$dir/gpus.out" | head -n 1)
    [ -n "$mine" ] || continue
    for k in 0 1 2 3; do
        line=$(grep "^task=$task gpu=$mine /dev/nvidia$k: " "$dir/gpus.out")
        if [ "$k" = "$mine" ]; then
            echo "$line" | grep -q "No such device or address$" && own=$((own + 1))
        elif echo " $gpus" | grep -q " $k "; then
            echo "$line" | grep -q "Operation not permitted$" && other=$((other + 1))
        else
            echo "$line" | grep -q "No such file or directory$" && absent=$((absent + 1))
        fi
    done
done
[ $own -eq 2 ] && pass "each task opens its own GPU's device node from the spec (ENXIO, no driver): GPUs $gpus" ||
    fail "own GPU: $own of 2 tasks"
[ $other -eq 2 ] && pass "each task is refused the other task's GPU (EPERM: its device cgroup)" ||
    fail "the other task's GPU: $other of 2 tasks got EPERM"
[ $absent -eq 4 ] && pass "the GPUs the step was not given are not in the container" ||
    fail "GPUs outside the step: $absent of 4 absent"
[ "$(grep -c "visible=void ctl=/dev/nvidiactl$" "$dir/gpus.out")" -eq 2 ] &&
    pass "NVIDIA_VISIBLE_DEVICES=void and /dev/nvidiactl from the spec's common edits" || fail "the spec's env or control node"
[ "$(grep -c "link=libcuda.so.1$" "$dir/gpus.out")" -eq 2 ] && pass "create-symlinks: $lib/libcuda.so -> libcuda.so.1" ||
    fail "create-symlinks: $(grep link= "$dir/gpus.out")"
[ "$(grep -c "ldconfig: libcuda.so.1 (libc6,x86-64) => $lib/libcuda.so.1$" "$dir/gpus.out")" -eq 2 ] &&
    pass "the image's ldconfig -p lists libcuda.so.1 (update-ldcache)" || fail "ldconfig -p: $(grep ldconfig "$dir/gpus.out")"
grep -q "enable-cuda-compat skipped" "$dir/gpus.err" && grep -q "disable-device-node-modification skipped" "$dir/gpus.err" &&
    pass "the verbose report names the skipped hooks" || fail "skipped hooks not reported: $(cat "$dir/gpus.err")"
[ -z "$(find "$dir/bundle/rootfs" -name 'libcuda*' -o -name ld.so.cache)" ] && pass "the image itself is unchanged" ||
    fail "written into the image: $(find "$dir/bundle/rootfs" -name 'libcuda*' -o -name ld.so.cache)"

# The host's ldconfig on the container's cache, while a task holds the container: read as
# the job's user, since the container's FUSE root lets no one else in (root included).
as_user srun -N1 -w n1 -n1 --gpus-per-task=1 --job-name=cdi-cache "${image[@]}" sleep 30 >/dev/null 2>&1 &
srun_pid=$!
task=
for _ in $(seq 1 100); do
    for p in $(pgrep -u "$job_user" -x sleep); do
        as_user test -f "/proc/$p/root/etc/ld.so.cache" -a -e "/proc/$p/root$lib/libcuda.so.999.99" && task=$p
    done
    [ -n "$task" ] && break
    sleep 0.1
done
listed=$([ -n "$task" ] && as_user /sbin/ldconfig -p -C "/proc/$task/root/etc/ld.so.cache" | grep libcuda.so.1)
scancel --name=cdi-cache
wait $srun_pid 2>/dev/null
echo "$listed" | grep -q "libcuda.so.1 (libc6,x86-64) => $lib/libcuda.so.1" &&
    pass "the host's ldconfig -p -C on the container's cache lists libcuda.so.1" ||
    fail "the host's ldconfig on the container's cache (task ${task:-not found}): $listed"

# 2. A hook unknown to trellis: the step does not start, and the message names it.
spec "$dir/cdi/nvidia.yaml" /usr/local/bin/site-gpu-hook
as_user_srun unknown_hook -N1 -w n1 -n1 --gres=gpu:1 "${image[@]}" sh -c 'echo STARTED'
rc=$?
[ $rc -ne 0 ] && ! grep -q STARTED "$dir/unknown_hook.out" && grep -q "site-gpu-hook.*unknown to trellis" "$dir/unknown_hook.err" &&
    pass "an unknown hook is refused: $(grep -o "hook .*unknown to trellis" "$dir/unknown_hook.err" | head -n 1)" ||
    fail "unknown hook: status $rc: $(cat "$dir/unknown_hook.out" "$dir/unknown_hook.err")"

# 3. No spec at all: a GPU step on both nodes warns once per node.
sed -i "s|^cdi_dirs = .*|cdi_dirs = [\"$dir/no-cdi\"]|" "$dir/trellis.toml"
as_user_srun no_spec -N2 -n4 --ntasks-per-node=2 --gres=gpu:2 "${image[@]}" sh -c 'echo "ran $SLURMD_NODENAME"'
rc=$?
warned=$(grep -c "no driver library (libcuda) was injected" "$dir/no_spec.err")
[ $rc -eq 0 ] && [ "$(grep -c "^ran n" "$dir/no_spec.out")" -eq 4 ] && [ "$warned" -eq 2 ] &&
    pass "no spec: the tasks run, warned once per node: $(grep -m1 "no driver library" "$dir/no_spec.err")" ||
    fail "no spec: status $rc, $warned warnings: $(cat "$dir/no_spec.out" "$dir/no_spec.err")"

echo "CDI tests: $failures failures"
[ "$failures" -eq 0 ]
