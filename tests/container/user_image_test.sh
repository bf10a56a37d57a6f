#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A user's own squashfs image (allow_user_images = true) while another user swaps files
# under it: bob, in the group of a shared project folder, exchanges alice's x.sqsh and x.json
# with his own (renameat2 RENAME_EXCHANGE, in a loop) while alice launches her image. In the
# group folder every launch either runs alice's image with her settings or is refused naming
# the folder; in a folder only alice may rename in, every launch runs her image. Never bob's
# root filesystem, never his settings. Also: a sticky group folder is accepted, a file her
# group may write is refused, a link to her own .sqsh runs it.
set -u
build=${TRELLIS_BUILD:?}
agent=$build/trellis-agent
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
failures=0
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to make the test users and their group"; exit 77; }
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] || { echo "SKIP: no user namespaces"; exit 77; }
for tool in mksquashfs squashfuse busybox /usr/bin/python3; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps)"; exit 77; }
done
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
alice=trellistest bob=trellistest2 group=trellisproj
for u in $alice $bob; do
    id "$u" >/dev/null 2>&1 || useradd -M -s /bin/sh "$u" || { echo "SKIP: cannot make $u"; exit 77; }
done
getent group $group >/dev/null || groupadd $group || { echo "SKIP: cannot make the group $group"; exit 77; }
usermod -aG $group $alice && usermod -aG $group $bob
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups "$@"; }

work=$(mktemp -d /tmp/trellis-user-image-test.XXXXXX)
chmod 755 "$work"
swapper=
trap '[ -z "$swapper" ] || kill $swapper 2>/dev/null; rm -rf "$work"' EXIT
# image NAME GREETING: a squashfs of busybox whose /etc/greeting says GREETING.
image() {
    local tree=$work/tree-$1
    mkdir -p "$tree"/{bin,etc,proc,sys,dev,tmp}
    cp "$(command -v busybox)" "$tree/bin/busybox"
    for applet in sh cat echo; do ln -sf busybox "$tree/bin/$applet"; done
    echo "$2" >"$tree/etc/greeting"
    unshare -r mksquashfs "$tree" "$work/$1.sqsh" -all-root -noappend -quiet >/dev/null
}
image alice "alice's image" && image bob "bob's image" || { echo "FAIL: mksquashfs"; exit 1; }
echo '{"config": {"Env": ["PATH=/bin", "OWNER=alice"]}}' >"$work/alice.json"
echo '{"config": {"Env": ["PATH=/bin", "OWNER=bob"]}}' >"$work/bob.json"
printf '[container]\nallow_user_images = true\n' >"$work/trellis.toml"

install -d -m 2775 -o root -g $group "$work/shared"  # a group project folder, without the sticky bit
install -d -m 0755 -o $alice "$work/alice"            # a folder only alice may rename in
for folder in shared alice; do
    install -m 0644 -o $alice "$work/alice.sqsh" "$work/$folder/x.sqsh"
    install -m 0644 -o $alice "$work/alice.json" "$work/$folder/x.json"
done
install -m 0644 -o $bob "$work/bob.sqsh" "$work/shared/evil.sqsh"
install -m 0644 -o $bob "$work/bob.json" "$work/shared/evil.json"

# launch_as FOLDER: alice's x.sqsh from FOLDER; prints "image <greeting> <OWNER>", or the refusal.
launch_as() {
    as $alice "$agent" launch --nproc-per-node 1 --config "$work/trellis.toml" --image "$work/$1/x.sqsh" -- \
        sh -c 'echo "image $(cat /etc/greeting) $OWNER"' 2>&1
}
# The control: bob's file in alice's folder is refused by its owner.
install -m 0644 -o $bob "$work/bob.sqsh" "$work/alice/bob.sqsh"
out=$(as $alice "$agent" launch --nproc-per-node 1 --config "$work/trellis.toml" --image "$work/alice/bob.sqsh" -- true 2>&1)
echo "$out" | grep -q "belongs to uid $(id -u $bob)" && pass "bob's image is refused by its owner: $(echo "$out" | tail -n 1)" ||
    fail "bob's image: $out"

# bob's loop: both files exchanged with his, as fast as it goes, counting the swaps.
setpriv --reuid=$bob --regid=$bob --init-groups /usr/bin/python3 - "$work/shared" >"$work/swaps" <<'PY' &
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
folder = sys.argv[1]
swaps = 0
def stop(*_):
    print(swaps)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
while True:
    for a, b in (("x.sqsh", "evil.sqsh"), ("x.json", "evil.json")):
        if libc.renameat2(-100, os.path.join(folder, a).encode(), -100, os.path.join(folder, b).encode(), 2) == 0:
            swaps += 1
PY
swapper=$!
sleep 0.2
served=0 refused=0 other=0
for i in $(seq 20); do
    out=$(launch_as shared)
    if echo "$out" | grep -qx "\[0\] image alice's image alice"; then served=$((served + 1))
    elif echo "$out" | grep -q "the folder $work/shared is writable by its group (mode 2775) without the sticky bit"; then
        refused=$((refused + 1))
    else other=$((other + 1)); echo "  launch $i: $out"; fi
done
alone=0
for i in $(seq 100); do
    out=$(launch_as alice)
    echo "$out" | grep -qx "\[0\] image alice's image alice" && alone=$((alone + 1)) || echo "  launch $i in alice's folder: $out"
done
kill -TERM $swapper; wait $swapper 2>/dev/null; swapper=
swaps=$(cat "$work/swaps" 2>/dev/null || echo 0)
[ "$swaps" -gt 0 ] && [ $other -eq 0 ] && [ $((served + refused)) -eq 20 ] &&
    pass "the group folder, $swaps swaps by bob meanwhile: $served of 20 launches ran alice's image, $refused were refused naming the folder, none ran bob's" ||
    fail "the group folder: $served served, $refused refused, $other other, $swaps swaps"
[ $alone -eq 100 ] && pass "alice's own folder, during the same swaps: 100 of 100 launches ran her image" ||
    fail "alice's own folder: $alone of 100 ran her image"

# The group folder with the sticky bit: bob cannot rename alice's entries, so it is accepted.
chmod +t "$work/shared"
install -m 0644 -o $alice "$work/alice.sqsh" "$work/shared/x.sqsh"
install -m 0644 -o $alice "$work/alice.json" "$work/shared/x.json"
out=$(launch_as shared)
echo "$out" | grep -qx "\[0\] image alice's image alice" && pass "a sticky group folder is accepted" ||
    fail "sticky group folder: $out"

# A file of hers that her group may write (mksquashfs under umask 002): opened once, its bytes
# could still change under the descriptor.
chmod 664 "$work/alice/x.json"
out=$(launch_as alice)
echo "$out" | grep -q "x.json' is writable by its group (mode 0664)" && pass "a group-writable settings file is refused" ||
    fail "group-writable settings: $out"
chmod 644 "$work/alice/x.json"

# A link in place of the image is followed once, when resolved, to a .sqsh that is checked.
ln -s "$work/alice/x.sqsh" "$work/alice/link.sqsh" && chown -h $alice "$work/alice/link.sqsh"
out=$(as $alice "$agent" launch --nproc-per-node 1 --config "$work/trellis.toml" --image "$work/alice/link.sqsh" -- \
    sh -c 'echo "image $(cat /etc/greeting)"' 2>&1)
echo "$out" | grep -qx "\[0\] image alice's image" && pass "a link to the user's own .sqsh runs that image" || fail "link: $out"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
