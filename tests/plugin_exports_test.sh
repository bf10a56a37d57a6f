#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# spank_trellis.so shows the process that loads it (srun, slurmstepd) only Slurm's entry
# points and its identity: slurm_spank_* and plugin_*. Everything else (the C++ library's
# templates, the agent's code) stays local, so that it can neither clash with nor be bound
# to the symbols of slurmstepd or of another plugin. It links no crypto library either: it
# makes each step's secret from the kernel's random source alone, and whatever it links is
# loaded into every srun and slurmstepd of the cluster.
set -u
plugin=${TRELLIS_BUILD:?}/spank/.libs/spank_trellis.so
command -v nm >/dev/null || { echo "SKIP: nm not found (apt-get install binutils)"; exit 77; }
[ -f "$plugin" ] || { echo "FAIL: $plugin was not built"; exit 1; }
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | sort)
echo "exported: $(echo "$exported" | tr '\n' ' ')"
others=$(echo "$exported" | grep -vE '^(slurm_spank_[a-z_]+|plugin_(name|type|version))$')
if [ -n "$others" ]; then
    echo "FAIL: also exported: $(echo "$others" | head -n 10 | tr '\n' ' ')"
    exit 1
fi
for needed in slurm_spank_init slurm_spank_task_init plugin_name plugin_type plugin_version; do
    echo "$exported" | grep -qx "$needed" || { echo "FAIL: $needed is not exported"; exit 1; }
done
echo "ok: only slurm_spank_* and plugin_* are exported"
needed=$(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "links: $needed"
case " $needed" in *" libcrypto"* | *" libssl"* | *" libsodium"*) echo "FAIL: the plugin links a crypto library"; exit 1 ;; esac
echo "ok: the plugin links no crypto library"
