// SPDX-License-Identifier: Apache-2.0
// `trellis-agent launch` options and where the ranks' identities come from: the command line,
// else TRELLIS_NNODES/TRELLIS_NODE_RANK/TRELLIS_MASTER, else Slurm's step (one agent per node:
// SLURM_NNODES, SLURM_NODEID, the step's first node), else this node alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "topology/plan.hpp"

namespace trellis::agent {

struct LaunchOptions {
    int nproc_per_node = 1;
    std::string image;                     // empty: natively
    std::string mounts;                    // SRC:DST[:ro],...
    bool writable = false;                 // a throw-away writable root
    std::vector<std::string> keep_env;     // names whose value wins over the image's Env
    bool entrypoint = false;               // run the image's Entrypoint before the command
    std::optional<topology::Policy> bind;  // default: the configuration's
    std::string config_path;
    std::optional<int> nnodes, node_rank;
    std::string master;      // host:port of rank 0
    int grace_seconds = 10;  // after one rank fails, before the others get SIGKILL
    bool verbose = false;    // print the binding table, as --trellis-verbose does
    std::vector<std::string> command;
};

// Throws UsageError naming the option and what it accepts.
LaunchOptions parse_launch_options(const std::vector<std::string>& args);

struct NodePlace {
    int nnodes = 1, node_rank = 0;
    std::string master;  // host:port
    std::string source;  // "options", "environment", "slurm", "this node"
};

// Throws std::runtime_error when the environment is inconsistent.
NodePlace find_node_place(const LaunchOptions& options);

}  // namespace trellis::agent
