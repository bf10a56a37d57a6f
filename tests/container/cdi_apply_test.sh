#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# GPUs through CDI, applied as trellis containers are made: a root-owned spec folder with a
# spec shaped like `nvidia-ctk cdi generate`'s for two fake GPUs (device nodes made here with
# mknod: nvidia0 c 195 0, nvidia1 c 195 1, nvidiactl c 195 255, nvidia-uvm) and a fake driver
# library (gcc, soname libcuda.so.1); then, as an unprivileged user in a user and mount
# namespace of its own, cdi_apply_probe selects GPU 0, binds, links and builds the
# ld.so.cache into a tmpfs root and checks what a task sees. An unknown hook and a device node
# given only by major/minor are refused. Root makes the fixtures only; it applies nothing.
set -u
build=${TRELLIS_BUILD:?}
probe=$build/tests/container/cdi_apply_probe
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to make the fake device nodes with mknod and the test user"; exit 77; }
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] ||
    { echo "SKIP: user namespaces are disabled (user.max_user_namespaces)"; exit 77; }
command -v gcc >/dev/null || { echo "SKIP: gcc is needed to make the fake libcuda"; exit 77; }
[ -x /sbin/ldconfig ] || { echo "SKIP: no /sbin/ldconfig"; exit 77; }
runner=trellistest
id "$runner" >/dev/null 2>&1 || useradd -M -s /bin/sh "$runner" ||
    { echo "SKIP: cannot make the test user $runner"; exit 77; }

work=$(mktemp -d /tmp/trellis-cdi-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The host's side: fake nodes and library, root's.
mkdir -p "$work/dev" "$work/lib" "$work/cdi" "$work/cdi-hook" "$work/cdi-mknod"
mknod -m 666 "$work/dev/nvidia0" c 195 0
mknod -m 666 "$work/dev/nvidia1" c 195 1
mknod -m 666 "$work/dev/nvidiactl" c 195 255
mknod -m 666 "$work/dev/nvidia-uvm" c 235 0
echo 'int cuInit(unsigned flags) { return flags ? 1 : 0; }' >"$work/lib/cuda.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$work/lib/libcuda.so.999.99" "$work/lib/cuda.c" || exit 99
cp "$probe" "$work/probe"
chmod 755 "$work/probe" "$work/dev" "$work/lib" "$work/cdi" "$work/cdi-hook" "$work/cdi-mknod"

cat >"$work/cdi/nvidia.yaml" <<YAML
---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
      hostPath: $work/dev/nvidia0
- name: GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
      hostPath: $work/dev/nvidia0
- name: "1"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia1
      hostPath: $work/dev/nvidia1
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
      hostPath: $work/dev/nvidia0
    - path: /dev/nvidia1
      hostPath: $work/dev/nvidia1
containerEdits:
  env:
  - NVIDIA_VISIBLE_DEVICES=void
  - NVIDIA_CTK_LIBCUDA_DIR=/usr/lib/x86_64-linux-gnu
  deviceNodes:
  - path: /dev/nvidiactl
    hostPath: $work/dev/nvidiactl
  - path: /dev/nvidia-uvm
    hostPath: $work/dev/nvidia-uvm
  hooks:
  - hookName: createContainer
    path: /usr/bin/nvidia-cdi-hook
    args: [nvidia-cdi-hook, enable-cuda-compat, --host-driver-version=999.99]
  - hookName: createContainer
    path: /usr/bin/nvidia-cdi-hook
    args:
    - nvidia-cdi-hook
    - create-symlinks
    - --link
    - libcuda.so.999.99::/usr/lib/x86_64-linux-gnu/libcuda.so.1
    - --link
    - libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so
    - --link
    - libcuda.so.1::/lib64/x86_64-linux-gnu/libcuda-through-link.so
  - hookName: createContainer
    path: /usr/bin/nvidia-cdi-hook
    args: [nvidia-cdi-hook, update-ldcache, --folder, /usr/lib/x86_64-linux-gnu]
  - hookName: createContainer
    path: /usr/bin/nvidia-cdi-hook
    args: [nvidia-cdi-hook, disable-device-node-modification]
  mounts:
  - hostPath: $work/lib/libcuda.so.999.99
    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.999.99
    options: [ro, nosuid, nodev, rbind, rprivate]
YAML
# The same GPU with a hook trellis does not know, then with a node only major/minor describe.
sed -n '1,/^containerEdits:/p' "$work/cdi/nvidia.yaml" | sed '$d' >"$work/cdi-hook/nvidia.yaml"
cat >>"$work/cdi-hook/nvidia.yaml" <<YAML
containerEdits:
  hooks:
  - hookName: createContainer
    path: /usr/local/bin/site-gpu-hook
    args: [site-gpu-hook, --prepare]
YAML
# (A name no host has: test clusters make /dev/nvidiaN with mknod.)
absent_node=/dev/trellis-cdi-test-absent-$$
cat >"$work/cdi-mknod/nvidia.json" <<JSON
{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
 "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "$absent_node", "type": "c", "major": 195, "minor": 7}]}}]}
JSON
chmod 644 "$work"/cdi*/*

as_runner() { setpriv --reuid="$runner" --regid="$runner" --clear-groups "$@"; }
for name in full hook mknod; do
    mkdir "$work/root-$name" && chown "$runner:" "$work/root-$name"
done

as_runner "$work/probe" apply "$work/cdi" "$work/root-full" || fail "applying the nvidia-ctk-shaped spec"
as_runner "$work/probe" refuse "$work/cdi-hook" "$work/root-hook" \
    'CDI hook "/usr/local/bin/site-gpu-hook --prepare" (createContainer) is unknown to trellis' ||
    fail "an unknown hook was not refused"
as_runner "$work/probe" refuse "$work/cdi-mknod" "$work/root-mknod" \
    "CDI device node $absent_node (195:7) is not on the host" || fail "a major/minor-only node was not refused"
# A folder the user could write is refused before anything is read from it.
chown "$runner" "$work/cdi"
as_runner "$work/probe" refuse "$work/cdi" "$work/root-hook" "CDI folder $work/cdi is owned by uid $(id -u $runner)" ||
    fail "a spec folder owned by the user was read"
chown root "$work/cdi"
# Nothing is left mounted on the host: the mounts lived in the probes' namespaces.
grep -q "$work" /proc/self/mountinfo && fail "mounts of the test are visible on the host"

[ $failures -eq 0 ] && echo "PASS: CDI applied in a user namespace" && exit 0
exit 1
