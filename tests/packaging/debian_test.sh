#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages: built from a clean `git clone` of this tree (or taken from
# TRELLIS_DEBS_DIR, where CI built them once), lintian-clean of errors, installed, the plugin
# loaded by the host's Slurm test cluster from where the package put it and through the
# plugstack line it ships, upgraded over a site-modified /etc/trellis/trellis.toml (kept), then
# purged: the host is left without them, as other tests expect (they load the build tree's
# plugin). Skips (77) when not root, without dpkg-buildpackage/lintian/apt-get, when a trellis
# package is already installed, or (without TRELLIS_DEBS_DIR) when the source is no git checkout.
#   TRELLIS_DEBS_DIR   a folder of already-built trellis .deb files
#   TRELLIS_DEB_PROFILES  the build profiles (default notrainer: the plugin, the agent and
#                      trellis-topo, 4 minutes here rather than 12 with the trainer, whose
#                      packages tests/debian builds and tests; "" builds them all)
#   TRELLIS_BUILD      the build tree (tests/slurm/harness.sh)
set -u
skip() { echo "SKIP: $*"; exit 77; }
top=$(cd "$(dirname "$0")/../.." && pwd)
packages=(trellis-common slurm-spank-trellis trellis-agent trellis-tools trellis-studies trellis-train trellis-cuda)

[ "$(id -u)" -eq 0 ] || skip "installs packages: needs root"
for tool in dpkg-deb apt-get lintian flock; do
    command -v "$tool" >/dev/null || skip "$tool is missing (apt-get install dpkg-dev lintian)"
done
if [ -z "${TRELLIS_DEBS_DIR:-}" ]; then
    command -v dpkg-buildpackage >/dev/null || skip "dpkg-buildpackage is missing (apt-get install dpkg-dev debhelper)"
    git -C "$top" rev-parse --git-dir >/dev/null 2>&1 ||
        skip "$top is no git checkout (the packages are built from a clone; set TRELLIS_DEBS_DIR)"
fi

# One run at a time on this host: it installs packages system-wide.
exec 8>/run/trellis-debian-test.lock
flock -w 1800 8 || skip "another packaging test held the lock for 30 minutes"
for package in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null)
    [ -z "$status" ] || [ "${status:0:2}" = "un" ] || [ "${status:0:2}" = "pn" ] ||
        skip "$package is already on this host ($status): the test would replace and purge it"
done

work=$(mktemp -d /tmp/trellis-debian.XXXXXX)
chmod 755 "$work"
installed=()
purge() {
    [ ${#installed[@]} -eq 0 ] && return 0
    apt-get purge -y -q -o DPkg::Lock::Timeout=600 "${installed[@]}" >"$work/purge.log" 2>&1 ||
        { echo "FAIL: purge: $(tail -n 5 "$work/purge.log")"; return 1; }
    installed=()
}
# The Slurm harness's cleanup runs at exit: the cluster first, then the packages go.
# shellcheck disable=SC2089  # harness.sh evals it
cleanup='purge; rm -rf "$work"'
export TRELLIS_BUILD=${TRELLIS_BUILD:-$top/_build}
# shellcheck source=tests/slurm/harness.sh
. "$top/tests/slurm/harness.sh"
trap 'purge; rm -rf "$work"' EXIT
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends "$@"; }

# 1. The packages.
if [ -n "${TRELLIS_DEBS_DIR:-}" ]; then
    debs=$TRELLIS_DEBS_DIR
else
    git clone -q "$top" "$work/src/trellis" || { echo "FAIL: git clone $top"; exit 1; }
    start=$(date +%s)
    profiles=${TRELLIS_DEB_PROFILES-notrainer}
    # Without debug information (no dbgsym package is installed here; a quarter of the compile time).
    (cd "$work/src/trellis" && DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" DEB_CFLAGS_STRIP=-g DEB_CXXFLAGS_STRIP=-g \
        dpkg-buildpackage -b -us -uc ${profiles:+-P"$profiles"}) >"$work/build.log" 2>&1 ||
        { echo "FAIL: dpkg-buildpackage: $(tail -n 20 "$work/build.log")"; exit 1; }
    echo "built in $(( $(date +%s) - start )) s${profiles:+ (build profiles: $profiles)}"
    debs=$work/src
fi
files=()
for f in "$debs"/trellis-*_*.deb "$debs"/slurm-spank-trellis_*.deb; do
    [[ -f $f && $(basename "$f") != *-dbgsym_* ]] && files+=("$f")
done
# The trainer's package is there unless the notrainer profile left it out.
with_trainer=1
[ -n "${TRELLIS_DEBS_DIR:-}" ] || [[ ! " ${profiles//,/ } " =~ " notrainer " ]] || with_trainer=0
expected=(trellis-common slurm-spank-trellis trellis-agent trellis-tools trellis-studies)
[ $with_trainer -eq 1 ] && expected+=(trellis-train)
for package in "${expected[@]}"; do
    printf '%s\n' "${files[@]}" | grep -q "/${package}_" && pass "$package built" || fail "no ${package}_*.deb in $debs"
done
[ $failures -eq 0 ] || exit 1
version=$(dpkg-deb -f "${files[0]}" Version)

# 2. lintian: no errors (warnings are listed).
lintian --no-tag-display-limit "${files[@]}" >"$work/lintian.log" 2>&1
grep -E '^[WI]: ' "$work/lintian.log" | sed 's/^/  lintian: /'
grep -q '^E: ' "$work/lintian.log" && fail "lintian errors: $(grep '^E: ' "$work/lintian.log")" || pass "lintian: no errors"
# The licence: debian/copyright in DEP-5 form, read by lintian (a tag naming copyright is a fault
# of it), and in every package.
copyright_tags=$(grep -E '^[EWI]: .*copyright' "$work/lintian.log")
[ -z "$copyright_tags" ] || fail "lintian on the copyright file: $copyright_tags"
for deb in "${files[@]}"; do
    case $deb in *.deb) ;; *) continue ;; esac
    dpkg-deb --fsys-tarfile "$deb" | tar -xOf - --wildcards '*/usr/share/doc/*/copyright' 2>/dev/null |
        grep -q '^License: Apache-2.0$' || fail "$(basename "$deb"): no usr/share/doc/*/copyright naming Apache-2.0"
done
[ -z "$copyright_tags" ] && pass "debian/copyright: DEP-5, Apache-2.0 in every package, no lintian tag about it"

# 3. The plugin depends on this host's Slurm major.minor (SLURM_VERSION_NUMBER is 0xMMmmpp).
number=$(awk '/define SLURM_VERSION_NUMBER/ { print $3 }' /usr/include/slurm/slurm_version.h 2>/dev/null)
plugin_deb=$(printf '%s\n' "${files[@]}" | grep /slurm-spank-trellis_)
depends=$(dpkg-deb -f "$plugin_deb" Depends)
if [ -n "$number" ]; then
    major_minor=$(printf '%d.%02d' $((number >> 16)) $(((number >> 8) & 255)))
    next=$(printf '%d.%02d' $((number >> 16)) $((((number >> 8) & 255) + 1)))
    grep -qF "slurm-wlm-basic-plugins (>= $major_minor), slurm-wlm-basic-plugins (<< $next~)" <<<"$depends" &&
        pass "the plugin depends on Slurm $major_minor" || fail "the plugin's Depends lack Slurm $major_minor: $depends"
fi

# 4. Installed: the files where Slurm and the admin look for them.
apt_get install "${files[@]}" >"$work/install.log" 2>&1 || { echo "FAIL: install: $(tail -n 10 "$work/install.log")"; exit 1; }
mapfile -t installed < <(for f in "${files[@]}"; do dpkg-deb -f "$f" Package; done)
pass "installed ${installed[*]}"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
installed_plugin=/usr/lib/$multiarch/slurm-wlm/spank_trellis.so
paths=("$installed_plugin" /etc/trellis/trellis.toml /etc/slurm/plugstack.conf.d/trellis.conf
    /usr/bin/trellis-agent /usr/bin/trellis-topo
    /usr/share/man/man8/spank_trellis.8.gz /usr/share/man/man5/trellis.toml.5.gz /usr/share/man/man7/trellis.7.gz
    /usr/share/man/man8/trellis-agent.8.gz /usr/share/man/man1/trellis-topo.1.gz
    /usr/bin/trellis-campaign /usr/bin/trellis-report /usr/share/man/man1/trellis-report.1.gz)
[ $with_trainer -eq 1 ] && paths+=(/usr/bin/trellis-bench /usr/bin/trellis-train
    /usr/share/man/man1/trellis-train.1.gz /usr/share/man/man1/trellis-bench.1.gz)
for path in "${paths[@]}"; do
    [ -e "$path" ] && pass "$path" || fail "$path is missing"
done
dpkg-query -W -f='${Conffiles}\n' trellis-common | grep -q ' /etc/trellis/trellis.toml ' &&
    pass "trellis.toml is a conffile" || fail "/etc/trellis/trellis.toml is not a conffile of trellis-common"
grep -qE '^(required|optional) ' /etc/slurm/plugstack.conf.d/trellis.conf &&
    fail "the plugstack snippet enables the plugin on install" || pass "the plugstack snippet is commented out"
grep -q "^# required $installed_plugin config=/etc/trellis/trellis.toml" /etc/slurm/plugstack.conf.d/trellis.conf &&
    pass "the plugstack snippet names the installed plugin" || fail "plugstack snippet: $(cat /etc/slurm/plugstack.conf.d/trellis.conf)"
/usr/bin/trellis-agent --version 2>&1 | grep -q /etc/trellis/trellis.toml &&
    pass "trellis-agent reads /etc/trellis/trellis.toml" || fail "trellis-agent --version: $(/usr/bin/trellis-agent --version 2>&1)"
/usr/bin/trellis-topo show >/dev/null 2>&1 && pass "trellis-topo show" || fail "trellis-topo show"
# The studies' commands find their Python package where the package put it.
/usr/bin/trellis-campaign --help >/dev/null 2>&1 && /usr/bin/trellis-report --help >/dev/null 2>&1 &&
    pass "trellis-campaign and trellis-report start" ||
    fail "the studies' commands: $(/usr/bin/trellis-report --help 2>&1 | tail -n 3)"

# 5. The installed plugin under the host's Slurm: from the harness's plugstack line, then from
#    the shipped snippet (uncommented, its trellis.toml the installed conffile).
plugin=$installed_plugin
export TRELLIS_CLUSTER_TOPO=/usr/bin/trellis-topo
make_cluster_dir trellis-debian  # its exit trap stops the cluster, then runs $cleanup
start_cluster
check_env() {  # NAME: the four tasks on two nodes each got their binding
    as_user_srun "$1" -N2 -n4 --trellis-bind=closest,verbose env || { fail "$1: srun: $(tail -n 5 "$dir/$1.err")"; return; }
    [ "$(grep -c '^TRELLIS_BINDING_SET=' "$dir/$1.out")" -eq 4 ] && [ "$(grep -c '^TRELLIS_CPUS=' "$dir/$1.out")" -eq 4 ] &&
        [ "$(grep -c '^TRELLIS_LOCAL_SIZE=2$' "$dir/$1.out")" -eq 4 ] &&
        pass "$1: each task has its binding (TRELLIS_BINDING_SET, TRELLIS_CPUS, TRELLIS_LOCAL_SIZE=2)" ||
        fail "$1: $(grep ^TRELLIS_ "$dir/$1.out" | sort | uniq -c)"
    grep -q 'trellis binding on n1' "$dir/$1.err" && grep -q 'trellis binding on n2' "$dir/$1.err" &&
        pass "$1: the binding report of both nodes" || fail "$1: no binding report: $(tail -n 5 "$dir/$1.err")"
}
[ "$(stat -c '%U %a' /var/cache/trellis/images 2>&1)" = "root 755" ] &&
    pass "the package made the image cache: /var/cache/trellis/images, root's, 0755" ||
    fail "image cache after install: $(stat -c '%U %a' /var/cache/trellis/images 2>&1)"
check_env installed_plugin
sed -e 's/^# \(required \)/\1/' /etc/slurm/plugstack.conf.d/trellis.conf >"$dir/plugstack.conf"
check_env shipped_snippet

# 6. An upgrade over a site's trellis.toml: every package repacked as a higher version whose
#    trellis.toml default changed; dpkg keeps the site's file (--force-confold) and puts the new
#    default beside it.
sed -i 's/^memory = "preferred"/memory = "none"  # site: no memory policy here/' /etc/trellis/trellis.toml
grep -q '^memory = "none"  # site' /etc/trellis/trellis.toml || fail "trellis.toml has no 'memory = \"preferred\"' line to change"
site_sum=$(md5sum </etc/trellis/trellis.toml)
chmod 1777 /var/cache/trellis/images  # as an older trellis had it
new_version=$version+upgradetest1
mkdir -p "$work/upgrade"
for f in "${files[@]}"; do
    package=$(dpkg-deb -f "$f" Package)
    tree=$work/upgrade/$package
    dpkg-deb -R "$f" "$tree"
    sed -i -e "s/^Version: .*/Version: $new_version/" -e "s/(= $version)/(= $new_version)/g" "$tree/DEBIAN/control"
    if [ -f "$tree/etc/trellis/trellis.toml" ]; then
        echo '# a new default of the next release' >>"$tree/etc/trellis/trellis.toml"
        sed -i "s|^[0-9a-f]*  etc/trellis/trellis.toml$|$(md5sum <"$tree/etc/trellis/trellis.toml" | cut -d' ' -f1)  etc/trellis/trellis.toml|" \
            "$tree/DEBIAN/md5sums"
    fi
    dpkg-deb -b "$tree" "$work/upgrade/${package}_${new_version}.deb" >/dev/null || fail "repack $package"
done
apt_get -o Dpkg::Options::=--force-confold install "$work"/upgrade/*.deb >"$work/upgrade.log" 2>&1 ||
    fail "upgrade: $(tail -n 10 "$work/upgrade.log")"
[ "$(dpkg-query -W -f='${Version}' trellis-common)" = "$new_version" ] && pass "upgraded to $new_version" ||
    fail "trellis-common is at $(dpkg-query -W -f='${Version}' trellis-common)"
[ "$(md5sum </etc/trellis/trellis.toml)" = "$site_sum" ] && pass "the upgrade kept the site's trellis.toml" ||
    fail "the upgrade replaced the site's trellis.toml"
[ "$(stat -c '%U %a' /var/cache/trellis/images)" = "root 755" ] && grep -q "was 1777" "$work/upgrade.log" &&
    pass "the upgrade made the older 1777 image cache 0755, and said so" ||
    fail "image cache after the upgrade: $(stat -c '%U %a' /var/cache/trellis/images); $(grep -i cache "$work/upgrade.log")"
grep -q 'a new default of the next release' /etc/trellis/trellis.toml.dpkg-dist 2>/dev/null &&
    pass "the new default is in trellis.toml.dpkg-dist" || fail "no trellis.toml.dpkg-dist with the new default"

# 7. Purged: nothing left behind (the cluster is stopped first, at exit, then this runs again
#    harmlessly).
"$top/tests/slurm/cluster" stop "$dir"
purge
for package in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null)
    [ -z "$status" ] || [ "${status:0:2}" = "un" ] || [ "${status:0:2}" = "pn" ] || fail "$package is still $status"
done
for path in /etc/trellis "$installed_plugin" /etc/slurm/plugstack.conf.d/trellis.conf /usr/bin/trellis-agent /var/cache/trellis/images; do
    [ ! -e "$path" ] || fail "$path is left after the purge"
done
pass "purged"
exit $((failures > 0))
