#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# trellis-agent import, as unprivileged users, from a private registry on 127.0.0.1 (see
# registry.sh) and from archives: the squashfs holds the image with its whiteouts applied and
# its mode-000 file whole, no setuid or setgid bit, the settings file has its ENV and WORKDIR;
# the user's registries.conf is not read; a cut cached image, a cut index.json and a killed
# copy's blob are repaired; a second import fetches no blob, a moved tag is seen, a pinned
# digest asks for no tag, allowed_registries holds; missing credentials, an unknown tag,
# plain HTTP and an unreachable registry say so; the password shows in no output and no
# command line; the cache top is root's 0755 and root makes each user's folder (a 1777 one
# refused, then made 0755; a squatted folder or link refused, then put aside by root); two
# users' caches are private; four imports at once fetch each blob once; archives import with
# the registry stopped, a crafted one writes nothing outside, a 3 MiB manifest is whole; a
# full cache leaves nothing of the import; root is refused.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${TRELLIS_BUILD:?}
agent=$build/trellis-agent
. "$here/registry.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (test users, a root-owned cache folder, a tmpfs)"; exit 77; }
missing=$(registry_missing mksquashfs unsquashfs | tr '\n' ' ')
[ -z "$missing" ] || { echo "SKIP: missing $missing(scripts/install-deps)"; exit 77; }
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] ||
    { echo "SKIP: user namespaces are off (user.max_user_namespaces)"; exit 77; }
user1=trellistest user2=trellistest2
for u in $user1 $user2; do
    id "$u" >/dev/null 2>&1 || useradd -M -s /bin/sh "$u" || { echo "SKIP: cannot add the test user $u"; exit 77; }
done
uid1=$(id -u $user1) uid2=$(id -u $user2)
work=$(mktemp -d /tmp/trellis-import-test.XXXXXX)
chmod 755 "$work"
registry_trap 'umount "$work/full" 2>/dev/null; [ -z "$sampler" ] || kill $sampler; rm -rf "$work"
    [ -n "$made_home" ] && rm -rf "$made_home" || rm -f "$user_home/.config/containers/registries.conf"'
sampler= made_home= user_home=/nonexistent
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

registry_start "$work/registry" || exit 1
registry_build_images >"$work/build.out" 2>&1 || { cat "$work/build.out"; exit 1; }
registry_push x tag && registry_push y tag || exit 1

# cache_folder NAME: a cache as the package makes it (root's, 0755).
cache_folder() { mkdir -p "$work/$1" && chmod 0755 "$work/$1"; }
# config NAME CACHE [LINES...]: a trellis.toml with that cache and the registry allowed and
# insecure, and users' own archives allowed;
# root makes both users' folders in the cache, as the plugin does at a step's start.
config() {
    local name=$1 cache=$2
    shift 2
    { echo "[container]"; echo "image_cache = \"$cache\""; echo "insecure_registries = [\"$REGISTRY\"]"
      [[ " $* " == *allowed_registries* ]] || echo "allowed_registries = [\"$REGISTRY\"]"
      echo "allow_user_images = true"; printf '%s\n' "$@"; } >"$work/$name.toml"
    [ "$(stat -c %a "$cache" 2>/dev/null)" != 755 ] || "$agent" cache-folder --config "$work/$name.toml" $user1 $user2 >/dev/null
}
cache_folder cache
config main "$work/cache"
for u in $user1 $user2; do
    registry_auth_at "$work/home-$u/auth.json" "$u" && chown "$u" "$work/home-$u"
done
# as USER [VAR=VALUE...] CMD...: as that user, with a clean environment and their auth file.
as() {
    local u=$1
    shift
    setpriv --reuid="$u" --regid="$u" --init-groups env -i PATH=/usr/bin:/bin HOME="$work/home-$u" \
        REGISTRY_AUTH_FILE="$work/home-$u/auth.json" "$@"
}
# import NAME USER REFERENCE [CONFIG]: runs the import; output in NAME.out, status in $status.
import() {
    status=0
    as "$2" "$agent" import "$3" --config "$work/${4:-main}.toml" >"$work/$1.out" 2>&1 || status=$?
}
field() { sed -n "s/^$1 //p" "$work/$2.out"; }  # FIELD NAME: squashfs, settings or digest from NAME.out
listing() { unsquashfs -lc "$1" 2>/dev/null | sed 's|^squashfs-root||'; }  # SQSH: its files, from /
# The first user's own containers configuration, in their home (the passwd entry's: helpers
# get that HOME), would send x to y and take plain HTTP from the registry (the review's R5):
# the node's pulls must read the site's alone. Removed at exit, with the home if made here.
user_home=$(getent passwd $user1 | cut -d: -f6)
[ -e "$user_home" ] || { made_home=$user_home; install -d -o $user1 "$user_home"; }
[ ! -e "$user_home/.config/containers/registries.conf" ] || { echo "SKIP: $user_home has a registries.conf of its own"; exit 77; }
install -d -o $user1 "$user_home/.config" "$user_home/.config/containers"
printf '[[registry]]\nprefix = "%s/x"\nlocation = "%s/y"\n\n[[registry]]\nlocation = "%s"\ninsecure = true\n' \
    "$REGISTRY" "$REGISTRY" "$REGISTRY" >"$user_home/.config/containers/registries.conf"

# 1. A pulled image: its files, whiteouts applied, the mode-000 file whole, its settings.
import first $user1 "docker://$REGISTRY/x:tag"
sqsh=$(field squashfs first) settings=$(field settings first) digest1=$(field digest first)
if [ $status -eq 0 ] && [ -f "$sqsh" ] && [ "$settings" = "${sqsh%.sqsh}.json" ]; then
    files=$(listing "$sqsh")
    echo "$files" | grep -qx /bin/busybox && echo "$files" | grep -qx /olddir/d && echo "$files" | grep -qx /x-marker &&
        pass "the image's files are in $sqsh" || fail "files missing from the squashfs: $files"
    ! echo "$files" | grep -qx /etc/delete-me && pass "a whiteout applied: /etc/delete-me is gone" ||
        fail "/etc/delete-me is still there"
    ! echo "$files" | grep -qx /olddir/old && [ "$(unsquashfs -cat "$sqsh" olddir/d)" = d ] &&
        pass "an opaque whiteout applied: /olddir holds only the new d" || fail "opaque whiteout: $(echo "$files" | grep olddir)"
    [ "$(unsquashfs -cat "$sqsh" locked)" = "locked content" ] && unsquashfs -lls "$sqsh" locked | grep -q "^---------- root/root *15 " &&
        pass "the mode-000 file kept its mode and its 15 bytes, owned by root in the image" || fail "the mode-000 file lost its content"
    unsquashfs -lls "$sqsh" suid sgid | grep -E '^-rwxr-xr-x root/root .* squashfs-root/s[ug]id$' | grep -c . | grep -qx 2 &&
        pass "no setuid or setgid bit in the cached image (the image has a 4755 and a 2755 file)" ||
        fail "setuid bits kept: $(unsquashfs -lls "$sqsh" suid sgid)"
    jq -e '.config.Env == ["FROM_IMAGE=yes"] and .config.WorkingDir == "/work" and (.config.Entrypoint | index("entrypoint") != null)' \
        "$settings" >/dev/null && pass "the settings file has the image's ENV, WORKDIR and ENTRYPOINT" || fail "settings: $(cat "$settings")"
    grep -q "fetching docker://$REGISTRY/x@$digest1" "$work/first.out" && grep -q "bytes of new blobs in" "$work/first.out" &&
        pass "progress names what is fetched, its bytes and seconds" || fail "progress: $(cat "$work/first.out")"
    [ "$(stat -c '%U %a' "$work/cache/$uid1")" = "$user1 700" ] && pass "the user's cache folder is theirs, 0700" ||
        fail "cache folder: $(stat -c '%U %a' "$work/cache/$uid1")"
else
    fail "import of x:tag: status $status: $(cat "$work/first.out")"
fi

# 2. A second import fetches no blob.
blobs_before=$(registry_requests '"GET /v2/x/blobs/')
import second $user1 "docker://$REGISTRY/x:tag"
[ $status -eq 0 ] && [ "$(field digest second)" = "$digest1" ] && [ "$(registry_requests '"GET /v2/x/blobs/')" -eq "$blobs_before" ] &&
    pass "a second import fetches no blob (registry log)" || fail "second import: status $status, blob GETs $blobs_before -> $(registry_requests '"GET /v2/x/blobs/')"

# A user's registries.conf steers neither the node's import (checked above: x's files, not
# y's) nor srun's lookup.
resolved=$(as $user1 "$agent" resolve --image "docker://$REGISTRY/x:tag" --config "$work/main.toml" 2>&1)
[ "$resolved" = "docker://$REGISTRY/x@$(registry_digest x:tag)" ] && [ "$digest1" = "$(registry_digest x:tag)" ] &&
    pass "the user's registries.conf is not read: srun's lookup and the node's import both took x" ||
    fail "registries.conf: resolved $resolved, imported $digest1, x is $(registry_digest x:tag)"

# A damaged cached image (cut in half) is found, named, and imported again.
size=$(stat -c %s "$sqsh")
as $user1 truncate -s $((size / 2)) "$sqsh"
import damaged $user1 "docker://$REGISTRY/x:tag"
[ $status -eq 0 ] && grep -q "is damaged (it has $((size / 2)) bytes of the" "$work/damaged.out" &&
    [ "$(stat -c %s "$sqsh")" = "$size" ] && unsquashfs -l "$sqsh" >/dev/null 2>&1 &&
    pass "a cut cached image is named and imported again: $(grep -o 'is damaged.*' "$work/damaged.out")" ||
    fail "damaged image: status $status $(cat "$work/damaged.out")"

# 2b. The image runs: `launch --image docker://...` imports it (here a cache hit) and its
# task runs in it, as the user, with the image's ENV and WORKDIR, and leaves no FUSE daemon.
config run "$work/cache" "allowed_registries = [\"$REGISTRY/x\"]"
run_out=$( (cd "$work" && as $user1 "$agent" launch --config "$work/run.toml" --image "docker://$REGISTRY/x:tag" --nproc-per-node 1 -- \
    sh -c 'cat /olddir/d; echo "env $FROM_IMAGE"; pwd; stat -c %s /locked; [ -e /etc/delete-me ] || echo deleted') 2>&1)
[ "$(echo "$run_out" | grep '^\[0\]' | tr '\n' ' ')" = "[0] d [0] env yes [0] /work [0] 15 [0] deleted " ] &&
    ! pgrep -u $user1 -f squashfuse >/dev/null &&
    pass "launch --image docker://: the task ran in the image with its ENV and WORKDIR, and no squashfuse is left" ||
    fail "launch --image docker://: $run_out"

# 3. A pinned digest asks for no tag. Before it, the blob layout's index.json is cut (as a
# kill during skopeo's rewrite leaves it) and a killed copy's blob is left: both repaired.
ydigest=$(registry_digest y:tag)
as $user1 sh -c ": >'$work/cache/$uid1/oci/index.json'; echo partial >'$work/cache/$uid1/oci/oci-put-blob123'"
tag_lookups=$(registry_requests '"GET /v2/y/manifests/tag ')
import pinned $user1 "docker://$REGISTRY/y@$ydigest"
[ $status -eq 0 ] && [ "$(field digest pinned)" = "$ydigest" ] && [ "$(registry_requests '"GET /v2/y/manifests/tag ')" -eq "$tag_lookups" ] &&
    listing "$(field squashfs pinned)" | grep -qx /y-marker &&
    pass "@sha256: imports that image with no tag lookup" || fail "pinned import: status $status $(tail -n 2 "$work/pinned.out")"
grep -q "oci/index.json did not parse (0 bytes.*put aside" "$work/pinned.out" && grep -q "removed 1 blob(s) a killed import" "$work/pinned.out" &&
    [ ! -e "$work/cache/$uid1/oci/oci-put-blob123" ] &&
    pass "a cut index.json is put aside and a killed copy's blob removed, and the import goes on" ||
    fail "layout repair: $(cat "$work/pinned.out")"

# 4. A moved tag is seen by the next import.
registry_push_as y x:tag || fail "re-push of y as x:tag"
import moved $user1 "docker://$REGISTRY/x:tag"
[ $status -eq 0 ] && [ "$(field digest moved)" != "$digest1" ] && listing "$(field squashfs moved)" | grep -qx /y-marker &&
    pass "a moved tag is seen: x:tag is now $(field digest moved)" || fail "moved tag: status $status $(tail -n 2 "$work/moved.out")"
registry_push x tag

# The site's allowed_registries hold for an import as for a step.
import policy $user1 "docker://$REGISTRY/y:tag" run
[ $status -eq 3 ] && grep -q "registry repository '$REGISTRY/y' is not allowed" "$work/policy.out" &&
    pass "import applies allowed_registries, as a step does" || fail "import policy: status $status $(cat "$work/policy.out")"

# 4b. Eviction past image_cache_gib (0: only the image asked for stays), but never one in use.
cache_folder cache-e
config evict "$work/cache-e" "image_cache_gib = 0"
xdigest=$(registry_digest x:tag)
import evict-x $user1 "docker://$REGISTRY/x@$xdigest" evict
xsqsh=$(field squashfs evict-x)
xlayer=$(jq -r '.layers[0].digest' "$work/registry/images/blobs/sha256/$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == "x") | .digest' "$work/registry/images/index.json" | cut -d: -f2)" | cut -d: -f2)
as $user1 flock -s "${xsqsh%.sqsh}.lock" sleep 3 &
holder=$!
sleep 0.3
import evict-y-held $user1 "docker://$REGISTRY/y@$ydigest" evict
[ $status -eq 0 ] && [ -f "$xsqsh" ] && pass "an image in use (its lock held shared) is not evicted" ||
    fail "eviction of an image in use: status $status, $(ls "$work/cache-e/$uid1")"
wait $holder
import evict-x-again $user1 "docker://$REGISTRY/x@$xdigest" evict
import evict-y $user1 "docker://$REGISTRY/y@$ydigest" evict
[ $status -eq 0 ] && [ ! -e "$xsqsh" ] && [ ! -e "${xsqsh%.sqsh}.json" ] && [ -f "$(field squashfs evict-y)" ] &&
    [ ! -e "$work/cache-e/$uid1/oci/blobs/sha256/$xlayer" ] && grep -q "evicted $xdigest" "$work/evict-y.out" &&
    pass "past image_cache_gib the least recently used image goes, its blobs with it" ||
    fail "eviction: status $status, $(ls "$work/cache-e/$uid1" "$work/cache-e/$uid1/oci/blobs/sha256"); $(cat "$work/evict-y.out")"

# 5. Errors that say what to do.
status=0
setpriv --reuid=$user1 --regid=$user1 --init-groups env -i PATH=/usr/bin:/bin HOME="$work/nohome" \
    "$agent" import "docker://$REGISTRY/x:tag" --config "$work/main.toml" >"$work/nocreds.out" 2>&1 || status=$?
[ $status -ne 0 ] && grep -q "unauthorized" "$work/nocreds.out" && grep -q "REGISTRY_AUTH_FILE" "$work/nocreds.out" &&
    pass "missing credentials say so: $(cat "$work/nocreds.out")" || fail "missing credentials: status $status $(cat "$work/nocreds.out")"
import unknown $user1 "docker://$REGISTRY/x:nope"
[ $status -ne 0 ] && grep -q "has no tag 'nope' of 'x'" "$work/unknown.out" && pass "an unknown tag says so: $(cat "$work/unknown.out")" ||
    fail "unknown tag: status $status $(cat "$work/unknown.out")"
config secure "$work/cache"
sed -i '/insecure_registries/d' "$work/secure.toml"
import http $user1 "docker://$REGISTRY/y:tag" secure  # y: the user's registries.conf entry that says insecure
[ $status -ne 0 ] && grep -q "insecure_registries" "$work/http.out" && pass "plain HTTP needs insecure_registries: $(cat "$work/http.out")" ||
    fail "plain HTTP: status $status $(cat "$work/http.out")"
config noskopeo "$work/cache" 'skopeo = "/nonexistent/skopeo"'
import noskopeo $user1 "docker://$REGISTRY/x:tag" noskopeo
[ $status -ne 0 ] && grep -q "set \[container\] skopeo" "$work/noskopeo.out" && pass "a missing skopeo names its key" ||
    fail "missing skopeo: $(cat "$work/noskopeo.out")"
status=0
"$agent" import "docker://$REGISTRY/x:tag" --config "$work/main.toml" >"$work/root.out" 2>&1 || status=$?
[ $status -eq 3 ] && grep -q "never as root" "$work/root.out" && pass "root is refused (status 3)" || fail "root: status $status $(cat "$work/root.out")"
import path $user1 "$work/x.sqsh"
[ $status -eq 2 ] && grep -q "not an image to import (accepted: docker://" "$work/path.out" &&
    pass "a path is no image to import (status 2)" || fail "path reference: status $status $(cat "$work/path.out")"
mkdir -m 1777 "$work/open-cache"
chmod 1777 "$work/open-cache"
config open "$work/open-cache"
import open $user1 "docker://$REGISTRY/x:tag" open
[ $status -eq 3 ] && grep -q "image_cache '$work/open-cache'.*mode 1777.*cache-folder" "$work/open.out" &&
    pass "a 1777 cache (an older trellis's) is refused: $(cat "$work/open.out")" ||
    fail "1777 cache: status $status $(cat "$work/open.out")"
migrated=$("$agent" cache-folder --config "$work/open.toml" 2>&1)
[ "$(stat -c '%U %a' "$work/open-cache")" = "root 755" ] && echo "$migrated" | grep -q "was 1777" &&
    pass "cache-folder makes a 1777 cache 0755: $migrated" || fail "migration: $migrated; $(stat -c '%U %a' "$work/open-cache")"
import before-folder $user1 "docker://$REGISTRY/x:tag" open
[ $status -eq 3 ] && grep -q "does not exist yet: root makes it at the start of a job step" "$work/before-folder.out" &&
    pass "an import before root made the user's folder is refused, naming what makes it" ||
    fail "import before the folder: status $status $(cat "$work/before-folder.out")"

# 6. Two users: private caches, each refused the other's.
import other $user2 "docker://$REGISTRY/x:tag"
[ $status -eq 0 ] && [ "$(stat -c '%U %a' "$work/cache/$uid2")" = "$user2 700" ] &&
    ! as $user2 cat "$sqsh" >/dev/null 2>&1 && ! as $user1 ls "$work/cache/$uid2" >/dev/null 2>&1 &&
    pass "two users' caches are private (0700 each, neither can read the other's)" || fail "private caches: status $status"
# The review's R2: a user squats another's folder. In a 0755 cache no user can make one; what
# an older 1777 cache let them make (here planted by root as them) is refused, then put aside
# by root, and the import goes on.
cache_folder squat
! as $user2 mkdir -m 0700 "$work/squat/$uid1" 2>/dev/null && [ ! -e "$work/squat/$uid1" ] &&
    pass "no user can make another's folder in the cache (R2)" || fail "a user made a folder in the cache"
cache_folder planted && ln -s "$work/cache/$uid2" "$work/planted/$uid1" && chown -h $user2 "$work/planted/$uid1"
install -d -m 0700 -o $user2 "$work/squat/$uid1"
for name in planted squat; do
    { echo "[container]"; echo "image_cache = \"$work/$name\""; echo "insecure_registries = [\"$REGISTRY\"]"
      echo "allowed_registries = [\"$REGISTRY\"]"; } >"$work/$name.toml"
done
import planted $user1 "docker://$REGISTRY/x:tag" planted
[ $status -eq 3 ] && grep -q "$work/planted/$uid1 is refused: it is a symbolic link" "$work/planted.out" &&
    pass "a planted symbolic link is refused: $(cat "$work/planted.out")" || fail "planted link: status $status $(cat "$work/planted.out")"
import squat $user1 "docker://$REGISTRY/x:tag" squat
[ $status -eq 3 ] && grep -q "$work/squat/$uid1 is refused: it belongs to uid $uid2" "$work/squat.out" &&
    pass "a folder owned by someone else is refused: $(cat "$work/squat.out")" || fail "squatted folder: status $status $(cat "$work/squat.out")"
for name in planted squat; do
    made=$("$agent" cache-folder --config "$work/$name.toml" $user1 2>&1)
    import $name-after $user1 "docker://$REGISTRY/x:tag" $name
    [ $status -eq 0 ] && echo "$made" | grep -q "put aside as $uid1.refused-" && [ "$(stat -c '%U %a' "$work/$name/$uid1")" = "$user1 700" ] &&
        [ "$(stat -c %U "$work/$name/$uid1".refused-*)" = "$user2" ] &&
        pass "root put the $name entry aside and made the user's folder; the import then works" ||
        fail "$name after cache-folder: status $status; $made; $(cat "$work/$name-after.out")"
done

# 7. Four imports of a new digest at once: one pull, all succeed; meanwhile every command
# line on the machine is sampled for the password.
registry_push_as y c:tag
cache_folder cache-c
config concurrent "$work/cache-c"
: >"$work/cmdlines"
( while :; do cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' >>"$work/cmdlines"; sleep 0.02; done ) &
sampler=$!
pids=()
for i in 1 2 3 4; do
    as $user1 "$agent" import "docker://$REGISTRY/c:tag" --config "$work/concurrent.toml" >"$work/c$i.out" 2>&1 &
    pids+=($!)
done
ok=0
for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)); done
kill $sampler; wait $sampler 2>/dev/null; sampler=
blob_gets=$(grep -oE '"GET /v2/c/blobs/sha256:[0-9a-f]+' "$REGISTRY_LOG" | sort)
digests=$(sed -n 's/^digest //p' "$work"/c[1-4].out | sort -u | wc -l)
[ $ok -eq 4 ] && [ "$digests" -eq 1 ] && [ -n "$blob_gets" ] && [ -z "$(echo "$blob_gets" | uniq -d)" ] &&
    [ "$(grep -l "^trellis-agent: imported" "$work"/c[1-4].out | wc -l)" -eq 1 ] &&
    pass "four imports at once: all succeed, one imports, each blob fetched once ($(echo "$blob_gets" | wc -l) GETs)" ||
    fail "concurrent imports: $ok succeeded, $digests digests, blob GETs: $blob_gets"
token=$(printf '%s:%s' "$REGISTRY_USER" "$REGISTRY_PASSWORD" | base64 -w0)
[ -s "$work/cmdlines" ] && ! grep -qF -e "$REGISTRY_PASSWORD" -e "$token" "$work/cmdlines" &&
    ! grep -lF -e "$REGISTRY_PASSWORD" -e "$token" "$work"/*.out >/dev/null &&
    pass "the password is in no output and no command line ($(wc -l <"$work/cmdlines") samples)" || fail "the password leaked"

# 8. Archives, with the registry stopped.
skopeo copy --quiet "oci:$work/registry/images:x" "oci-archive:$work/x-oci.tar" &&
    skopeo copy --quiet "oci:$work/registry/images:y" "docker-archive:$work/y-docker.tar:y:tag" && chmod 644 "$work"/*.tar ||
    fail "making the archives"
registry_stop
import unreachable $user1 "docker://$REGISTRY/x:tag"
[ $status -ne 0 ] && grep -q "cannot reach the registry" "$work/unreachable.out" && pass "a stopped registry cannot be reached, and it says so" ||
    fail "unreachable: status $status $(cat "$work/unreachable.out")"
for archive in "oci-archive:$work/x-oci.tar x-marker" "docker-archive:$work/y-docker.tar y-marker"; do
    set -- $archive
    import archive $user1 "$1"
    [ $status -eq 0 ] && listing "$(field squashfs archive)" | grep -qx "/$2" &&
        pass "$1 imports with the registry stopped ($(field digest archive))" || fail "$1: status $status $(cat "$work/archive.out")"
done
# An archive asks no registry: a REGISTRY_AUTH_FILE that cannot be read is not its concern.
status=0
as $user1 env REGISTRY_AUTH_FILE=/nonexistent/auth.json "$agent" import "oci-archive:$work/x-oci.tar" \
    --config "$work/main.toml" >"$work/archive-auth.out" 2>&1 || status=$?
[ $status -eq 0 ] && pass "an archive imports whatever REGISTRY_AUTH_FILE names" ||
    fail "an archive with an unreadable REGISTRY_AUTH_FILE: status $status $(cat "$work/archive-auth.out")"

# 8b. A crafted archive (the review's R3): a link to the user's home, then a file through it;
# and a link through /proc/PID/root of another process of the user's (back to the host's
# mounts), then a file through that. skopeo unpacks an archive following such links; the
# import must not write outside its own temporary folder.
for victim in victim victim2; do echo "the user's own" >"$work/home-$user1/$victim.txt"; done
chown $user1 "$work/home-$user1/"victim*.txt
setpriv --reuid=$user1 --regid=$user1 --init-groups sleep 120 &
other=$!
/usr/bin/python3 - "$work/x-oci.tar" "$work/evil.tar" "$work/home-$user1" "/proc/$other/root$work/home-$user1" <<'PY'
import io, sys, tarfile
source, target, home, through_proc = sys.argv[1:]
with tarfile.open(source) as tin, tarfile.open(target, "w") as tout:
    for member in tin.getmembers():
        tout.addfile(member, tin.extractfile(member) if member.isfile() else None)
    for name, where, victim in (("evil_proc", through_proc, "victim2.txt"), ("evil_home", home, "victim.txt")):
        link = tarfile.TarInfo(name); link.type = tarfile.SYMTYPE; link.linkname = where
        tout.addfile(link)
        data = b"overwritten by a crafted archive\n"
        entry = tarfile.TarInfo(name + "/" + victim); entry.size = len(data)
        tout.addfile(entry, io.BytesIO(data))
PY
chmod 644 "$work/evil.tar"
import evil $user1 "oci-archive:$work/evil.tar"
kill $other; wait $other 2>/dev/null
[ "$(cat "$work/home-$user1/victim.txt" "$work/home-$user1/victim2.txt")" = "the user's own
the user's own" ] && [ ! -e "$work/home-$user1/evil_home" ] &&
    pass "a crafted archive wrote nothing in the user's home, directly or through /proc (import status $status: $(tail -n 1 "$work/evil.out" | cut -c1-160))" ||
    fail "the crafted archive wrote through its links: $(cat "$work/home-$user1/victim.txt" "$work/home-$user1/victim2.txt")"

# 8c. A manifest of 3 MiB (under skopeo's 4 MiB) imports whole, and its digest is its own.
/usr/bin/python3 - "$work/registry/images" "$work/bigman" <<'PY'
import hashlib, json, os, shutil, sys
source, layout = sys.argv[1:]
shutil.copytree(source, layout)
index = json.load(open(f"{layout}/index.json"))
entry = next(m for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == "y")
manifest = json.load(open(f"{layout}/blobs/sha256/{entry['digest'].split(':')[1]}"))
manifest["annotations"] = {"pad": "p" * (3 << 20)}
data = json.dumps(manifest).encode()
digest = hashlib.sha256(data).hexdigest()
open(f"{layout}/blobs/sha256/{digest}", "wb").write(data)
entry.update(digest="sha256:" + digest, size=len(data))
index["manifests"] = [entry]
json.dump(index, open(f"{layout}/index.json", "w"))

PY
tar -C "$work/bigman" -cf "$work/big-oci.tar" . && chmod 644 "$work/big-oci.tar"
big_digest=sha256:$(sha256sum "$work/bigman/blobs/sha256/$(jq -r '.manifests[0].digest' "$work/bigman/index.json" | cut -d: -f2)" | cut -d' ' -f1)
import bigmanifest $user1 "oci-archive:$work/big-oci.tar"
[ $status -eq 0 ] && [ "$(field digest bigmanifest)" = "$big_digest" ] &&
    pass "a 3 MiB manifest imports whole: $big_digest" || fail "3 MiB manifest: status $status $(tail -n 3 "$work/bigmanifest.out" | cut -c1-300)"

# 9. A full cache: a clear error, nothing half-written. 1 MiB fills while the blobs are
# copied; 3 MiB holds the blobs and the unpacked tree (about 1 and 2 MiB), not the squashfs.
mkdir "$work/full"
for size in 1m 3m; do
    mount -t tmpfs -o size=$size,mode=755 tmpfs "$work/full" || { echo "SKIP (part): cannot mount a tmpfs for the full-cache check"; break; }
    config full "$work/full"
    import full-$size $user1 "oci-archive:$work/x-oci.tar" full
    # Nothing of the failed import stays: no temporary, no blob (they would count against
    # image_cache_gib with no image to evict).
    left=$(find "$work/full" \( -name 'oci-put-blob*' -o -path '*/blobs/*' \) -type f
        find "$work/full" -path '*/oci' -prune -o \( -name '*.tmp*' -o -name '*.sqsh' -o -name '*.json' \) -print)
    [ $status -ne 0 ] && grep -q "image cache $work/full/$uid1 is full" "$work/full-$size.out" && [ -z "$left" ] &&
        grep -q "is a tmpfs" "$work/full-$size.out" &&
        pass "a full $size cache: $(grep -o "is full.*while [a-z]* [a-z]*" "$work/full-$size.out"), nothing left" ||
        fail "full $size cache: status $status, left: $left; $(cat "$work/full-$size.out")"
    umount "$work/full"
done

[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
