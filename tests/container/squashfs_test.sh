#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A squashfs image (what a registry import gives) run by an unprivileged user through
# `trellis-agent launch --image`, as the plugin runs a step's: the image is built here with
# mksquashfs inside a user namespace (-all-root) from busybox-static, with its settings (Env,
# WorkingDir, Entrypoint) beside it as skopeo prints them. Checked: a file of the image is
# read; writes to /etc fail, and succeed with --writable, the .sqsh unchanged either way; the
# working-directory rule row by row; the image's Env over the job's, except --env names and
# the variables trellis sets; the Entrypoint only with --entrypoint; no squashfuse process and
# no mount of it left after a normal end and after kill -9 of the launcher.
set -u
build=${TRELLIS_BUILD:?}
agent=$build/trellis-agent
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
failures=0
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to make the test user and a root-owned image"; exit 77; }
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] || { echo "SKIP: no user namespaces"; exit 77; }
for tool in mksquashfs squashfuse fuse-overlayfs busybox unshare; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps)"; exit 77; }
done
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
runner=trellistest
id "$runner" >/dev/null 2>&1 || useradd -M -s /bin/sh "$runner" || { echo "SKIP: cannot make $runner"; exit 77; }
as_runner() { setpriv --reuid="$runner" --regid="$runner" --init-groups "$@"; }

work=$(mktemp -d /tmp/trellis-squashfs-test.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/images" "$work/data" "$work/rootfs"
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,etc,work,proc,sys,dev,tmp,var/tmp,usr/bin}
cp "$(command -v busybox)" "$rootfs/bin/busybox"
for applet in sh cat env pwd echo ls sleep stat true; do ln -s busybox "$rootfs/bin/$applet"; done
echo "from the image" >"$rootfs/etc/greeting"
printf '#!/bin/sh\necho entrypoint-ran\nexec "$@"\n' >"$rootfs/entry.sh"
chmod 755 "$rootfs/entry.sh"
# As the user namespace's root, so that no file it cannot read becomes an empty one.
unshare -r mksquashfs "$rootfs" "$work/images/app.sqsh" -all-root -noappend -quiet >/dev/null || { echo "FAIL: mksquashfs"; exit 1; }
cp "$work/images/app.sqsh" "$work/images/bare.sqsh"
# The same tree as an administrator's OCI bundle (root's, as bundles must be).
mkdir -p "$work/bundle" && cp -a "$rootfs" "$work/bundle/rootfs"
cat >"$work/images/app.json" <<'JSON'
{"architecture": "amd64", "os": "linux",
 "config": {"Env": ["PATH=/bin:/usr/bin", "FROM_IMAGE=yes", "KEEP_ME=image", "SLURM_JOB_ID=image", "TRELLIS_RANK=image"],
            "WorkingDir": "/work", "Entrypoint": ["/entry.sh"], "Cmd": ["sh"]}}
JSON
echo '{"config": {"Env": ["PATH=/bin"]}}' >"$work/images/bare.json"
chmod 644 "$work/images/"*
cat >"$work/trellis.toml" <<TOML
[container]
allowed_images = ["$work/images/*.sqsh", "$work/bundle"]
allowed_mounts = ["$work/data"]
TOML
hash=$(sha256sum <"$work/images/app.sqsh")
# run NAME AGENT-ARGS... -- COMMAND: one rank as the test user, output in NAME.out
run() {
    local name=$1
    shift
    as_runner "$agent" launch --nproc-per-node 1 --config "$work/trellis.toml" "$@" >"$work/$name.out" 2>&1
}
app=(--image "$work/images/app.sqsh")
# This test's FUSE daemons (others may run as the same user): those reading its images.
daemons() {
    for p in $(pgrep -u "$runner" -x squashfuse) $(pgrep -u "$runner" -x fuse-overlayfs); do
        ls -l /proc/$p/fd 2>/dev/null | grep -q "$work/images" && echo $p
        grep -qs -e "$work/images" -e "$work/bundle" /proc/$p/cmdline && echo $p
    done | sort -u
}
leftovers() {  # nothing of squashfuse's left: no process, no mount anywhere
    [ -z "$(daemons)" ] && ! grep -qs -e "$work/images" -e "$work/bundle" /proc/[0-9]*/mountinfo
}

run read "${app[@]}" -- cat /etc/greeting && grep -qx "\[0\] from the image" "$work/read.out" &&
    pass "a file of the squashfs image is read" || { cat "$work/read.out"; fail "reading the image"; }
leftovers && pass "no squashfuse process or mount after a normal end" || fail "squashfuse or its mount left after the end"
# The squashfuse key names the program (never a PATH lookup).
sed 's|^\[container\]$|[container]\nsquashfuse = "/nonexistent/squashfuse"|' "$work/trellis.toml" >"$work/nofuse.toml"
as_runner "$agent" launch --nproc-per-node 1 --config "$work/nofuse.toml" "${app[@]}" -- true >"$work/nofuse.out" 2>&1
grep -q "cannot run squashfuse '/nonexistent/squashfuse'.*set \[container\] squashfuse" "$work/nofuse.out" &&
    pass "[container] squashfuse names the program: $(tail -n 1 "$work/nofuse.out" | cut -c1-120)" || fail "squashfuse key: $(cat "$work/nofuse.out")"

run readonly "${app[@]}" -- sh -c 'echo x >/etc/written && echo wrote'
grep -q "Read-only file system" "$work/readonly.out" && ! grep -q wrote "$work/readonly.out" &&
    [ "$(sha256sum <"$work/images/app.sqsh")" = "$hash" ] &&
    pass "writes to /etc fail (read-only file system) and the .sqsh is unchanged" ||
    { cat "$work/readonly.out"; fail "the image's root is not read-only"; }

run writable "${app[@]}" --writable -- sh -c 'echo x >/etc/written && cat /etc/written /etc/greeting && echo y >/newdir-file && echo wrote'
grep -q "^\[0\] wrote" "$work/writable.out" && grep -q "^\[0\] from the image" "$work/writable.out" &&
    [ "$(sha256sum <"$work/images/app.sqsh")" = "$hash" ] &&
    pass "--writable: /etc and / take writes, the .sqsh is unchanged" || { cat "$work/writable.out"; fail "--writable"; }
leftovers && pass "no FUSE daemon or mount after a --writable run" || fail "a --writable run left a daemon or a mount"

# An OCI bundle takes --writable too (the layer CDI's edits go into); the bundle is untouched.
bundle_before=$(find "$work/bundle" -newer "$work/trellis.toml" | wc -l)
run bundle-readonly --image "$work/bundle" -- sh -c 'echo x >/etc/written && echo wrote; echo done'
grep -q "^\[0\] done" "$work/bundle-readonly.out" && ! grep -q wrote "$work/bundle-readonly.out" &&
    pass "a bundle's root is read-only without --writable" || { cat "$work/bundle-readonly.out"; fail "bundle read-only"; }
run bundle-writable --image "$work/bundle" --writable -- sh -c 'echo x >/etc/written && cat /etc/written /etc/greeting'
grep -qx "\[0\] x" "$work/bundle-writable.out" && grep -qx "\[0\] from the image" "$work/bundle-writable.out" &&
    [ ! -e "$work/bundle/rootfs/etc/written" ] && [ "$(find "$work/bundle" -newer "$work/trellis.toml" | wc -l)" = "$bundle_before" ] &&
    pass "--writable over a bundle: /etc takes writes, the bundle is unchanged" ||
    { cat "$work/bundle-writable.out"; fail "--writable over a bundle"; }
leftovers && pass "no FUSE daemon or mount after a bundle's --writable run" || fail "a bundle's --writable run left a daemon or mount"

# The working directory, row by row.
(cd "$work/data" && run wd-mounted "${app[@]}" --mounts "$work/data:$work/data" -- pwd)
grep -qx "\[0\] $work/data" "$work/wd-mounted.out" && pass "working directory: the job's, under a mount destination" ||
    { cat "$work/wd-mounted.out"; fail "working directory under a mount"; }
(cd "$work" && run wd-image "${app[@]}" -- pwd)
grep -qx "\[0\] /work" "$work/wd-image.out" && ! grep -q "tasks start in /" "$work/wd-image.out" &&
    pass "working directory: the image's WorkingDir" || { cat "$work/wd-image.out"; fail "working directory: WorkingDir"; }
(cd /usr && run wd-exists --image "$work/images/bare.sqsh" -- pwd)
grep -qx "\[0\] /usr" "$work/wd-exists.out" && pass "working directory: the job's, when the image has it" ||
    { cat "$work/wd-exists.out"; fail "working directory: the job's in the image"; }
(cd "$work" && run wd-root --image "$work/images/bare.sqsh" -- pwd)
grep -qx "\[0\] /" "$work/wd-root.out" && grep -q "working directory $work is not in the image .*: tasks start in /" "$work/wd-root.out" &&
    pass "working directory: / with a line saying why" || { cat "$work/wd-root.out"; fail "working directory: /"; }

# The image's Env.
KEEP_ME=job SLURM_JOB_ID=job run env "${app[@]}" -- env
grep -qx "\[0\] FROM_IMAGE=yes" "$work/env.out" && grep -qx "\[0\] KEEP_ME=image" "$work/env.out" &&
    grep -qx "\[0\] SLURM_JOB_ID=job" "$work/env.out" && grep -qx "\[0\] TRELLIS_RANK=0" "$work/env.out" &&
    grep -qx "\[0\] PATH=/bin:/usr/bin" "$work/env.out" &&
    pass "Env: the image's over the job's, never over SLURM_* or TRELLIS_*" || { cat "$work/env.out"; fail "Env"; }
KEEP_ME=job run env-keep "${app[@]}" --env KEEP_ME -- env
grep -qx "\[0\] KEEP_ME=job" "$work/env-keep.out" && grep -qx "\[0\] FROM_IMAGE=yes" "$work/env-keep.out" &&
    pass "Env: a --env name keeps the job's value" || { cat "$work/env-keep.out"; fail "--env"; }
run env-bad "${app[@]}" --env "1BAD" -- true
[ $? -eq 2 ] && grep -q "is not a variable name" "$work/env-bad.out" && pass "--env refuses a malformed name" ||
    { cat "$work/env-bad.out"; fail "--env 1BAD"; }

# The Entrypoint.
run entry-off "${app[@]}" -- echo command-ran
grep -qx "\[0\] command-ran" "$work/entry-off.out" && ! grep -q entrypoint-ran "$work/entry-off.out" &&
    pass "Entrypoint: ignored by default" || { cat "$work/entry-off.out"; fail "Entrypoint off"; }
run entry-on "${app[@]}" --entrypoint -- echo command-ran
grep -qx "\[0\] entrypoint-ran" "$work/entry-on.out" && grep -qx "\[0\] command-ran" "$work/entry-on.out" &&
    pass "Entrypoint: run before the command with --entrypoint" || { cat "$work/entry-on.out"; fail "Entrypoint on"; }

# kill -9 of the launcher: its helper sees the end and stops squashfuse; the ranks' mounts go
# with the last of them.
setpriv --reuid="$runner" --regid="$runner" --init-groups "$agent" launch --nproc-per-node 1 --config "$work/trellis.toml" \
    "${app[@]}" -- sleep 60 >"$work/kill.out" 2>&1 &
launcher=$!
for _ in $(seq 1 100); do [ -n "$(daemons)" ] && pgrep -P $launcher -x sleep >/dev/null && break; sleep 0.1; done
rank=$(pgrep -P $launcher -x sleep)
if [ -z "$rank" ]; then
    cat "$work/kill.out"
    fail "the rank did not start"
else
    [ -n "$(daemons)" ] && pass "squashfuse serves the image while the rank runs" || fail "no squashfuse found for the image"
    kill -9 $launcher
    wait $launcher 2>/dev/null
    for _ in $(seq 1 50); do [ -n "$(daemons)" ] || break; sleep 0.1; done
    [ -n "$(daemons)" ] && fail "squashfuse outlived the launcher's kill -9" ||
        pass "squashfuse stopped after kill -9 of the launcher"
    kill -9 "$rank"
    for _ in $(seq 1 50); do leftovers && break; sleep 0.1; done
    leftovers && pass "no mount left once the rank is gone" || fail "a mount of the image outlived its ranks"
fi
[ "$(sha256sum <"$work/images/app.sqsh")" = "$hash" ] && pass "the .sqsh is unchanged after every run" || fail "the .sqsh changed"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
