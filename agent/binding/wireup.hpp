// SPDX-License-Identifier: Apache-2.0
// What the users' own frameworks read to find each other, so that `srun python train.py`
// needs no wrapper script: the variables of PyTorch's env:// initialisation (which torchrun
// also sets, and Lightning and Accelerate take when present) and, on request, TensorFlow's
// TF_CONFIG. JAX finds Slurm's own variables and Horovod under srun talks MPI (PMIx), so
// neither needs anything from here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/binding/binding_set.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"

namespace trellis::agent {

// What a step asked for (--trellis-wireup / TRELLIS_WIREUP).
struct WireupChoice {
    bool torch = true;      // MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK ...
    bool tf = false;        // TF_CONFIG
    bool tf_chief = false;  // rank 0 is TensorFlow's chief (ParameterServerStrategy's coordinator)
    int tf_ps = 0;          // the next ranks are parameter servers
};

// "none", "torch", "tf[:chief][:ps=N]" or a comma list of torch and one tf item.
// Throws UsageError naming what is accepted.
WireupChoice parse_wireup(const std::string& value);

// Where a task sits in its step.
struct StepLayout {
    int rank = 0, world_size = 1, local_rank = 0, local_size = 1, node_rank = 0, nnodes = 1;
    std::string master_addr;  // rank 0's node, as Slurm reaches it
    int port = 0;             // MASTER_PORT
    // For TF_CONFIG only: every rank's "host:port" (rank_addresses()).
    std::vector<std::string> rank_addresses;
};

// Each rank's TensorFlow server address: its node's, at a port above `port` by its place
// among the ranks at that address.
std::vector<std::string> rank_addresses(const std::vector<std::string>& node_addresses,
                                        const std::vector<int>& rank_nodes, int port);

// Ranks to nodes as Slurm distributes them: tasks_per_node is SLURM_STEP_TASKS_PER_NODE
// ("2(x3),1"), distribution SLURM_DISTRIBUTION ("block", "cyclic", with or without a
// second level after ':'). Throws UsageError for a distribution whose placement
// it cannot know (plane, arbitrary), naming it.
std::vector<int> rank_nodes(const std::string& tasks_per_node, const std::string& distribution);

// The variables, and TRELLIS_WIREUP_SET listing their names, so that a launch started inside
// this step (an srun from an `srun --pty bash`, trellis-agent launch under srun) can tell
// values trellis set for the outer step from values its user set.
std::map<std::string, std::string> wireup_env(const WireupChoice& choice, const StepLayout& layout);

// Whether the user set NAME in the environment `lookup` reads: present, and not one that
// trellis set for an enclosing step (listed in TRELLIS_WIREUP_SET).
template <typename Lookup>
bool set_by_user(const std::string& name, Lookup&& lookup) {
    if (lookup(name.c_str()).empty()) return false;
    return !listed(lookup(env::wireup_set.name), name);
}

}  // namespace trellis::agent
