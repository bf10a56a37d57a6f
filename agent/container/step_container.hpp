// A step's container on this node, from a request to a running container and back: the
// policy checks, the runtime choice, the registry. Behind `trellis-agent prepare|release`
// (which the plugin runs) and `trellis-agent launch --image`.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "agent/config.hpp"
#include "agent/container/container_spec.hpp"

namespace trellis::agent {

struct StepContainerRequest {
    std::string id;
    std::string image;                    // as the user gave it
    std::string user_mounts;              // "SRC:DST[:ro],...", checked against allowed_mounts
    std::vector<Mount> system_mounts;     // PMIx folders: from the plugin, not the user
    std::vector<std::string> devices;
    Identity user{0, 0};
    pid_t owner = 0;                      // the container lives as long as this process
};

// Throws PolicyError (refused), RuntimeError (the runtime failed) or std::invalid_argument.
pid_t prepare_step_container(const StepContainerRequest& request, const Config& config);
void release_step_container(const std::string& id, const Config& config);

// The container id for a Slurm step on a node: trellis-n1-42.0.
std::string step_container_id(const std::string& node, unsigned job, unsigned step);

// Where trellis-pause is installed.
std::string pause_program();

}  // namespace trellis::agent
