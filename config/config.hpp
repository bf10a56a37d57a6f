// SPDX-License-Identifier: Apache-2.0
// The configuration of the plugin and the agent: the TOML file (etc/trellis.toml) and the
// `key=value` overrides of its [binding] keys given in plugstack.conf. Pure parsing, no Slurm,
// so it is unit-tested and fuzzed on its own.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "topology/plan.hpp"

namespace trellis::config {

// The message names the file (or plugstack.conf argument), the line and the key. A bad
// configuration is bad input (exit status 2).
struct ConfigError : UsageError {
    using UsageError::UsageError;
};

// A task's memory policy: MPOL_BIND to its NUMA nodes (allocations fail over to the OOM
// killer when they are full), MPOL_PREFERRED (local first, then elsewhere), or the default.
enum class MemoryPolicy { bind, preferred, none };
std::string memory_policy_name(MemoryPolicy policy);
// Throws UsageError naming the accepted values.
MemoryPolicy parse_memory_policy(const std::string& name);

struct BindingConfig {
    topology::Policy policy = topology::Policy::closest;
    std::string topology_xml;  // "" = discover; "%n" stands for the Slurm node name
    // The NVIDIA driver's proc folder, which numbers the device files ("%n": the node name).
    std::string nvidia_proc = "/proc/driver/nvidia";
    MemoryPolicy memory = MemoryPolicy::preferred;
    bool share_gpus = false;
    std::vector<std::string> hca_include;
    std::vector<std::string> hca_exclude;
    bool require_active = true;
    bool smt = false;
    std::vector<std::string> exported = {"CUDA_VISIBLE_DEVICES", "NCCL_IB_HCA", "UCX_NET_DEVICES",
                                         "NCCL_SOCKET_IFNAME"};
};

// Where `make install` put trellis-agent.
std::string installed_agent_path();

struct ContainerConfig {
    std::vector<std::string> allowed_images;          // glob patterns; none: no image is allowed
    std::vector<std::string> allowed_mounts;          // path prefixes users may bind-mount
    std::vector<std::string> namespaces = {"mount"};  // what tasks join: mount, ipc, uts
    std::string agent = installed_agent_path();       // the trellis-agent the plugin runs
    // The program that runs .sif images, by absolute path: Apptainer or Singularity, in its
    // user-namespace mode (OCI bundles need no program: the agent makes their container).
    std::string apptainer = "/usr/bin/apptainer";
    // Registry images (docker://): fnmatch patterns (FNM_PATHNAME) matched against the
    // normalised "host[:port]/repository"; an entry that is only "host[:port]" allows every
    // repository there. Empty: no registry image is allowed.
    std::vector<std::string> allowed_registries;
    // Exact "host[:port]" entries that may be reached over plain HTTP or unverified TLS; they
    // allow nothing by themselves.
    std::vector<std::string> insecure_registries;
    // Whether users may run image files of their own (oci-archive:, docker-archive:, .sqsh)
    // that allowed_images does not match.
    bool allow_user_images = false;
    // The node's image cache: a folder on local disk, root's and 0755, one 0700
    // folder per user in it; least recently used images go past image_cache_gib per user.
    std::string image_cache = "/var/cache/trellis/images";
    long image_cache_gib = 50;
    // A registry image is imported once, by srun as the user, and
    // sent to the step's nodes with sbcast (agent/image/broadcast.hpp); false: each node
    // imports it itself.
    bool image_broadcast = true;
    // Seconds a tag's digest, once resolved, is used without asking the registry again (for
    // nodes without a way out); 0: every step asks.
    long digest_lifetime = 0;
    // CDI specifications (JSON or YAML), a later folder winning on a name clash, and the hook
    // programs besides those trellis implements that a spec may run.
    std::vector<std::string> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
    std::vector<std::string> allowed_cdi_hooks;
    // The programs that import and serve images, by absolute path, run as the job's user.
    std::string skopeo = "/usr/bin/skopeo", umoci = "/usr/bin/umoci", mksquashfs = "/usr/bin/mksquashfs",
                squashfuse = "/usr/bin/squashfuse", fuse_overlayfs = "/usr/bin/fuse-overlayfs";
    // Where these settings came from, for refusals to name: the file, or the defaults.
    std::string origin = "the built-in defaults (no trellis.toml)";
};

// What the plugin tells the users' own frameworks (PyTorch's env://, TF_CONFIG).
struct WireupConfig {
    bool frameworks = true;                     // MASTER_ADDR, RANK, WORLD_SIZE ... for every step
    int port_first = 20000, port_last = 29999;  // MASTER_PORT is chosen per step from these
};

struct Config {
    std::string path;  // the file read, "" when none
    BindingConfig binding;
    ContainerConfig container;
    WireupConfig wireup;
};

// Variables the `export` key may name: those the planner renders apart from TRELLIS_*,
// which are always set.
const std::vector<std::string>& exportable_variables();

// Parses TOML text; `origin` names it in messages.
Config parse_config_text(std::string_view text, const std::string& origin);

// Reads the file named by a `config=PATH` argument (or default_path, which may be absent)
// and applies the other `key=value` arguments on top.
Config load_config(const std::vector<std::string>& plugstack_args, const std::string& default_path);

// The agent's configuration: the file PATH, or the installed trellis.toml when PATH is "".
Config load_agent_config(const std::string& path);

}  // namespace trellis::config
