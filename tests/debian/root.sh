# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that run in a root of another Debian release (tests/gpu/bundle_test.sh,
# tests/debian/slurm_release.sh) and by tests/debian/root. A root is made once, from the
# network, and kept under /var/cache/trellis for later runs:
#   debian_root RELEASE ROOT LOG [PACKAGE...]
#       makes ROOT unless a whole one of RELEASE (trixie, sid...) is there: debootstrap
#       --variant=minbase RELEASE into a new folder beside it, then apt-get install
#       --no-install-recommends PACKAGE... in it, then a rename into place, so that a half-made
#       root (a test killed, the network gone) is never taken for a whole one; the next call
#       removes what a killed one left. A PACKAGE may pin a version, as apt-get takes it
#       (slurm-wlm=26.05.*): when the mirror has no such version, nothing is installed and the
#       status is 2, with a line naming the versions it has; a pin ending in '?'
#       (apptainer=1.4.*?) is optional instead: without that version the root is made without
#       the package, and the line naming the versions is left in ROOT/.trellis-root-missing for
#       the tests that need it. A word +RELEASE (+sid) adds that release's archive as a source
#       at pin priority 100: nothing comes from it but a package asked for by a version only it
#       has, and that package's dependencies still come from RELEASE. One caller at a time makes it
#       (flock on ROOT.lock); the others wait and share it. The tools' output goes to LOG; on
#       failure its end is printed and the status is 1.
#   debian_mount ROOT
#       mounts what programs in the root need: /proc, /sys (with this machine's cgroup
#       hierarchies under /sys/fs/cgroup), a /dev of its own (the usual nodes, /dev/fuse, a
#       devpts instance and /dev/shm: device nodes made there, such as the test cluster's
#       /dev/nvidiaN, stay there), tmpfs on /tmp and /run, and this machine's /etc/hosts. Call
#       it only in a mount namespace of its own (unshare --mount --propagation private), so that
#       all of it goes away with the caller and is never seen by the rest of the machine.
#   debian_enter ROOT COMMAND...
#       COMMAND with ROOT as its "/", after debian_mount (below).
# The mirror is TRELLIS_DEBIAN_MIRROR, else the one this machine's own apt sources name for
# its release (debian_host_mirror).
debian_complete=.trellis-root-complete
debian_missing=.trellis-root-missing

# debian_host_mirror: the URI of the first Debian archive in this machine's apt sources
# (deb822 .sources files, then one-line sources.list files) that serves its own release, not
# its security updates: the mirror a site has chosen, and the one known to be reachable. A
# mirror+file: URI is read from the file it names (its first URI). Nothing on a machine that is
# not Debian: its archive's codename would not be Debian's.
debian_host_mirror() {
    local codename uri
    codename=$(. /etc/os-release 2>/dev/null && [ "${ID:-}" = debian ] && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 1
    uri=$({
        awk -v want="$codename" '
            function flush() {
                if (deb && enabled && uris != "" && index(" " suites " ", " " want " ")) { split(uris, u, " "); print u[1] }
                deb = 0; enabled = 1; uris = suites = ""
            }
            BEGIN { enabled = 1 }
            FNR == 1 { flush() }
            /^[[:space:]]*$/ { flush(); next }
            /^Types:/ { deb = index(" " substr($0, 7) " ", " deb ") > 0 }
            /^Enabled:[[:space:]]*no/ { enabled = 0 }
            /^URIs:/ { uris = substr($0, 6) }
            /^Suites:/ { suites = substr($0, 8) }
            END { flush() }' /etc/apt/sources.list.d/*.sources 2>/dev/null
        # one-line form: deb [options] URI SUITE COMPONENT...
        sed -E -n 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+).*/\2 \3/p' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk -v want="$codename" '$2 == want { print $1 }'
    } | grep -m 1 -v '^$')
    case $uri in
    mirror+file:*) uri=$(grep -m 1 -E '^[a-z]+://' "${uri#mirror+file:}" 2>/dev/null | awk '{ print $1 }') ;;
    esac
    [ -n "$uri" ] && echo "${uri%/}"
}
debian_mirror=${TRELLIS_DEBIAN_MIRROR:-$(debian_host_mirror)}

# debian_mirror_reachable: the mirror's host answers on its port within 10 s.
debian_mirror_reachable() {
    local scheme=${debian_mirror%%://*} host=${debian_mirror#*://} port
    host=${host%%/*} port=80
    [ "$scheme" = https ] && port=443
    [[ $host == *:* ]] && port=${host##*:} host=${host%:*}
    [ -n "$host" ] && timeout 10 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}

debian_root() {
    local release=$1 root=$2 log=$3
    shift 3
    [ -n "$debian_mirror" ] || { echo "no Debian mirror: this machine's apt sources name none for its release; set TRELLIS_DEBIAN_MIRROR"; return 1; }
    mkdir -p "$(dirname "$root")" || { echo "cannot make $(dirname "$root")"; return 1; }
    (
        flock 9 || { echo "cannot lock $root.lock"; exit 1; }
        debian_has "$release" "$root" "$@" && exit 0
        debian_make "$release" "$root" "$log" "$@"
    ) 9>"$root.lock"
}

# debian_has RELEASE ROOT [PACKAGE...]: ROOT is a whole root of RELEASE, made with every
# PACKAGE (a root made before a package joined the list is made again).
debian_has() {
    local release=$1 root=$2 package made
    [ -f "$root/$debian_complete" ] || return 1
    made=$(cat "$root/$debian_complete")
    [[ $made == "debootstrap --variant=minbase $release,"* ]] || return 1
    made=" ${made#*; packages: } "
    shift 2
    for package in "$@"; do
        [[ $made == *" $package "* ]] || return 1
    done
}

# debian_frozen ROOT RELEASE: the Release file debootstrap fetched into ROOT is testing's or
# unstable's (its Suite field: only they carry a Valid-Until) and its Valid-Until has passed (a
# frozen snapshot). A date that cannot be read is taken as not passed, with a note.
debian_frozen() {
    local release_file suite until seconds
    release_file=$(ls "$1"/var/lib/apt/lists/*_dists_"$2"_Release 2>/dev/null | head -n 1)
    suite=$(sed -n 's/^Suite: //p' "$release_file" 2>/dev/null)
    case $suite in testing|unstable) ;; *) return 1 ;; esac
    until=$(sed -n 's/^Valid-Until: //p' "$release_file")
    [ -n "$until" ] || return 1
    seconds=$(date -d "$until" +%s 2>/dev/null) ||
        { echo "note: cannot read the Valid-Until \"$until\" of $release_file: taken as not passed"; return 1; }
    [ "$seconds" -lt "$(date +%s)" ]
}

debian_make() {
    local release=$1 root=$2 log=$3 new began=$SECONDS status
    shift 3
    rm -rf --one-file-system "$root" "$root".new.*
    new=$(mktemp -d "$root.new.XXXXXX") || { echo "cannot make a folder beside $root"; return 1; }
    chmod 755 "$new"
    if ! debootstrap --variant=minbase "$release" "$new" "$debian_mirror" >"$log" 2>&1; then
        tail -n 20 "$log"
        [ -f "$new/debootstrap/debootstrap.log" ] && tail -n 20 "$new/debootstrap/debootstrap.log"
        rm -rf --one-file-system "$new"
        echo "debootstrap of Debian $release from $debian_mirror into $new failed (its output ends above)"
        return 1
    fi
    echo "ok: debootstrap --variant=minbase $release in $((SECONDS - began)) s"
    # A frozen mirror's testing or unstable Release has passed its Valid-Until, and apt would
    # refuse the whole archive.
    if debian_frozen "$new" "$release"; then
        echo 'Acquire::Check-Valid-Until "false";' >"$new/etc/apt/apt.conf.d/99trellis-frozen-mirror"
        echo "note: the mirror's $release Release file has expired (a frozen snapshot): apt in the root does not check its date"
    fi
    if [ $# -gt 0 ]; then
        # No daemon a package installs (munge, slurmd) is started in the root.
        printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d" && chmod 755 "$new/usr/sbin/policy-rc.d"
        unshare --mount --propagation private bash -c '
                new=$2 mirror=$3
                . "$1" && debian_mount "$new" && shift 3 || exit 1
                in_new() { chroot "$new" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive "$@"; }
                set -o pipefail
                install=()
                for package in "$@"; do
                    [[ $package == +* ]] || { install+=("$package"); continue; }
                    also=${package#+}
                    echo "deb $mirror $also main" >"$new/etc/apt/sources.list.d/trellis-$also.list"
                    printf "Package: *\nPin: release n=%s\nPin-Priority: 100\n" "$also" >"$new/etc/apt/preferences.d/trellis-$also"
                done
                update=$(in_new apt-get update -q 2>&1)
                status=$?
                echo "$update"
                # A frozen mirror: the added release may be a testing or unstable one past its
                # Valid-Until, whose date alone is then not checked.
                for also in $(ls "$new/etc/apt/sources.list.d" | sed -n "s/^trellis-\(.*\)\.list$/\1/p"); do
                    echo "$update" | grep -q "dists/$also/.*is expired" || continue
                    echo "deb [check-valid-until=no] $mirror $also main" >"$new/etc/apt/sources.list.d/trellis-$also.list"
                    echo "note: the mirror'"'"'s $also Release file has expired (a frozen snapshot): apt in the root does not check its date"
                    in_new apt-get update -q; status=$?
                done
                # Without the added releases when they cannot be read: only optional pins come from them.
                if [ $status -ne 0 ] && ls "$new"/etc/apt/sources.list.d/trellis-*.list >/dev/null 2>&1; then
                    echo "note: apt-get update fails with $(ls "$new/etc/apt/sources.list.d" | grep "^trellis-" | paste -sd" " -): left out"
                    rm -f "$new"/etc/apt/sources.list.d/trellis-*.list "$new"/etc/apt/preferences.d/trellis-*
                    in_new apt-get update -q; status=$?
                fi
                [ $status -eq 0 ] || exit 1
                missing=() chosen=() optional_chosen=()
                for package in "${install[@]}"; do
                    [[ $package == *=* ]] || { chosen+=("$package"); continue; }
                    name=${package%%=*} want=${package#*=} optional=
                    [[ $want == *\? ]] && want=${want%\?} optional=1
                    have=$(in_new apt-cache madison "$name" | awk -F"|" "{ gsub(/ /, \"\", \$2); print \$2 }" | sort -u | paste -sd" " -) ||
                        { echo "apt-cache madison $name failed"; exit 1; }
                    for version in $have; do
                        # shellcheck disable=SC2053  # the pin is a glob
                        if [[ $version == $want ]]; then
                            if [ -n "$optional" ]; then optional_chosen+=("$name=$want"); else chosen+=("$name=$want"); fi
                            continue 2
                        fi
                    done
                    line="$name $want (the mirror has: ${have:-none})"
                    if [ -n "$optional" ]; then echo "$line" >>"$new/'"$debian_missing"'"; echo "note: left out: $line"
                    else missing+=("$line"); fi
                done
                [ ${#missing[@]} -eq 0 ] || { (IFS=";"; echo "pinned versions missing: ${missing[*]}"); exit 2; }
                in_new apt-get install -y -q --no-install-recommends "${chosen[@]}" || exit 1
                # An optional package whose dependencies this release cannot meet is left out.
                for package in "${optional_chosen[@]}"; do
                    in_new apt-get install -y -q --no-install-recommends "$package" && continue
                    echo "${package%%=*} ${package#*=} (apt-get install $package failed when the root was made)" >>"$new/'"$debian_missing"'"
                    echo "note: left out: $package (apt-get install failed)"
                done
            ' debian "${BASH_SOURCE[0]}" "$new" "$debian_mirror" "$@" >>"$log" 2>&1
        status=$?
        if [ $status -ne 0 ]; then
            rm -rf --one-file-system "$new"
            if [ $status -eq 2 ]; then
                grep '^pinned versions missing: ' "$log" | sed "s/^/Debian $release: /"
                return 2
            fi
            tail -n 30 "$log"
            echo "apt-get install in the Debian $release root $new failed (its output ends above)"
            return 1
        fi
        rm -f "$new/usr/sbin/policy-rc.d"
        chroot "$new" apt-get clean
    fi
    echo "debootstrap --variant=minbase $release, $(date -u '+%Y-%m-%d %H:%M UTC'); packages: ${*:-none}" >"$new/$debian_complete"
    mv "$new" "$root" || { echo "cannot rename $new to $root"; return 1; }
    echo "ok: made the Debian $release root $root in $((SECONDS - began)) s"
}

debian_mount() {
    local root=$1 node
    # The root a mount point of its own: in it, `unshare --propagation private` (each test
    # cluster's slurmd) changes the propagation of "/", which must be a mount.
    mount --bind "$root" "$root" &&
        mount -t proc proc "$root/proc" &&
        mount --rbind /sys "$root/sys" &&
        mount -t tmpfs -o mode=755,size=64m tmpfs "$root/dev" &&
        mount -t tmpfs -o mode=1777 tmpfs "$root/tmp" &&
        mount -t tmpfs -o mode=755 tmpfs "$root/run" || { echo "cannot mount $root, /proc, /sys, /dev, /tmp or /run in it"; return 1; }
    for node in null zero full random urandom tty fuse; do
        [ -e "/dev/$node" ] || continue
        touch "$root/dev/$node" && mount --bind "/dev/$node" "$root/dev/$node" || { echo "cannot bind /dev/$node into $root"; return 1; }
    done
    # This machine's name as this machine resolves it (munged and Slurm look it up).
    # A minbase root has no /etc/hosts to bind over: it gets an empty one first.
    if [ -f /etc/hosts ]; then
        [ -e "$root/etc/hosts" ] || : >"$root/etc/hosts"
        mount --bind /etc/hosts "$root/etc/hosts" || { echo "cannot bind /etc/hosts into $root"; return 1; }
    fi
    mkdir -p "$root/dev/pts" "$root/dev/shm" "$root/run/lock"
    mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$root/dev/pts" && ln -s pts/ptmx "$root/dev/ptmx" &&
        mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm" || { echo "cannot mount /dev/pts or /dev/shm in $root"; return 1; }
    ln -s /proc/self/fd "$root/dev/fd" && ln -s /proc/self/fd/0 "$root/dev/stdin" &&
        ln -s /proc/self/fd/1 "$root/dev/stdout" && ln -s /proc/self/fd/2 "$root/dev/stderr"
}

# The Slurm roots (tests/debian/slurm_release.sh), one per release, and their packages:
# trellis's build dependencies, Slurm (pinned to the major.minor the suites are written for),
# munge, and what the suites run there.
debian_slurm_root() { echo "/var/cache/trellis/$1-slurm"; }
debian_build_packages="autoconf automake libtool pkg-config g++ make build-essential python3 libhwloc-dev hwloc
    libpmix-dev libssl-dev libibverbs-dev rdma-core libtomlplusplus-dev libdnnl-dev libturbojpeg0-dev libjpeg62-turbo-dev
    zlib1g-dev nlohmann-json3-dev libslurm-dev catch2 libyaml-dev debhelper dpkg-dev"
debian_slurm_packages() {
    case $1 in
    # Slurm 24.11 with every suite's peers: PyTorch 2.6, Open MPI 5 with PMIx 5, the container
    # and image tools, and matplotlib for trellis-report (train_test draws its campaign's figures).
    # Apptainer 1.4 is in unstable only (tests/slurm/apptainer_test.sh): from there, and only it.
    trixie) echo "$debian_build_packages slurm-wlm=24.11.* slurmd slurmctld slurm-client munge
        python3-torch openmpi-bin libopenmpi-dev time util-linux busybox-static iproute2 procps jq skopeo umoci
        squashfs-tools squashfuse fuse-overlayfs ca-certificates python3-matplotlib +sid apptainer=1.4.*?" ;;
    # Slurm 26.05 for the GPU matrix, the CPU allocation and the plugin's own suite (busybox
    # fills the image of the containerised launch's cost; matplotlib, which trellis-studies
    # needs, is in the root rather than installed with the packages at every run).
    sid) echo "$debian_build_packages slurm-wlm=26.05.* slurmd slurmctld slurm-client munge
        time util-linux busybox-static iproute2 procps jq ca-certificates python3-matplotlib" ;;
    *) return 1 ;;
    esac
}

# debian_enter ROOT COMMAND...: not by chroot: a chrooted process may not make a user namespace
# (the kernel refuses CLONE_NEWUSER to it), and the container steps' tasks make theirs. ROOT
# becomes the root of a mount namespace of its own (pivot_root), and this machine's tree is
# unmounted there.
debian_enter() {
    local root=$1
    shift
    unshare --mount --propagation private sh -c 'cd "$1" && pivot_root . mnt && umount -l /mnt && shift && exec "$@"' \
        debian "$root" "$@"
}
