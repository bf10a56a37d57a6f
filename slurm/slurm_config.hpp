// SPDX-License-Identifier: Apache-2.0
// What trellis reads of Slurm's own configuration, to agree with Slurm 22.05's gres/gpu
// plugin on which GPUs a step has and how its tasks number them: gres.conf (which device
// files are the node's GPUs, in Slurm's order), slurm.conf and cgroup.conf (whether devices
// are constrained), and slurm.conf's node addresses (where a step's first node is reached).
// The files sit beside slurm.conf, as Slurm keeps them; slurmd exports that path to
// slurmstepd as SLURM_CONF, in configless mode too (its cached copy).
// Host lists ("n[1-4]", "/dev/nvidia[0-3]") are expanded by libslurm, whose symbols the
// process provides (srun, slurmstepd) or the program links (trellis-agent, the tests).
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"

namespace trellis::slurm {

struct SlurmConfigFiles {
    std::string slurm_conf, gres_conf, cgroup_conf, mpi_conf;
    // The files beside slurm_conf ("" gives /etc/slurm/slurm.conf, Slurm's default).
    static SlurmConfigFiles beside(const std::string& slurm_conf);
};

// gres.conf's GPUs for one node.
struct GresGpus {
    bool configured = false;  // gres.conf gives this node GPUs (File= or AutoDetect)
    // AutoDetect=nvml or rsmi: Slurm detects the GPUs itself and orders them by PCI bus id.
    bool autodetect = false;
    // Device files in Slurm's gres index order: gres.conf's lines for every node, then those
    // naming nodes, each File= expanded (a MultipleFiles= GPU by its /dev/nvidiaN). Slurm
    // regroups typed GPUs in the order of slurm.conf's Gres=; that is not followed here.
    std::vector<std::string> files;
};

// The slurm.conf the calling process's Slurm reads: SLURM_CONF (slurmd exports it to
// slurmstepd, its configless cache too; srun and a job have it when the site sets it), else ""
// (Slurm's default, which SlurmConfigFiles::beside and the readers below take).
std::string slurm_conf_from_environment();

// mpi.conf's PMIxCliTmpDirBase beside slurm.conf: where PMIx makes its clients' folders;
// "" when it names none.
std::string pmix_client_tmpdir_base(const std::string& slurm_conf);

// A missing gres.conf means no GPU is managed by Slurm. Throws UsageError naming
// the file and line of a File= or NodeName= value that libslurm cannot expand.
GresGpus read_gres_gpus(const std::string& gres_conf, const std::string& node);

// Slurm's rule (gres_use_local_device_index): a task sees only its GPUs, numbered from 0,
// when slurm.conf's TaskPlugin includes task/cgroup and cgroup.conf has ConstrainDevices=yes.
bool devices_constrained(const SlurmConfigFiles& files);

// A SPANK plugin's line in plugstack.conf: "required|optional PATH [ARGS...]".
struct PlugstackLine {
    bool optional = false;
    std::string plugin;  // as written: a path, or a name under Slurm's PluginDir
    std::vector<std::string> args;
};

// slurm.conf's PlugStackConfig, else plugstack.conf beside slurm.conf (Slurm's default).
std::string plugstack_path(const std::string& slurm_conf);
// slurm.conf's TaskProlog ("" when none): a container step needs it at the same path.
std::string task_prolog_path(const std::string& slurm_conf);
// How long a step's credential lets its launch wait, in seconds: AuthInfo's cred_expire in
// slurm.conf, else Slurm's default of 120.
long credential_lifetime(const std::string& slurm_conf);
// Every plugin line of plugstack.conf, its `include GLOB` files followed in order.
std::vector<PlugstackLine> read_plugstack(const std::string& path);

// How Slurm reaches each node: its NodeAddr in slurm.conf, else its NodeHostname, else its
// name. slurm.conf is read once for all of them.
std::vector<std::string> node_addresses(const std::string& slurm_conf, const std::vector<std::string>& nodes);
std::string node_address(const std::string& slurm_conf, const std::string& node);

// The device file's minor number as Slurm reads it (gres_common.c): the digits at the end of
// its name, -1 when there are none.
int device_number_of(const std::string& file);

// libslurm's host list expansion, in order. Throws UsageError when it fails.
std::vector<std::string> expand_hostlist(const std::string& list);

}  // namespace trellis::slurm
