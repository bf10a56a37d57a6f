// SPDX-License-Identifier: Apache-2.0
// A step's container on this node, from a request to the namespaces its tasks join: the
// policy checks and the image's kind, behind `trellis-agent prepare`, which the plugin (from
// slurmstepd, as the job's user) and `trellis-agent launch --image` run.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "agent/container/container_spec.hpp"
#include "agent/container/held_container.hpp"
#include "common/error.hpp"

namespace trellis::agent {

struct StepContainerRequest {
    std::string image;        // as the user gave it
    std::string user_mounts;  // "SRC:DST[:ro],...", checked against allowed_mounts
    // Slurm's paths, from the plugin, not the user: PMIx's folders, "PATH:ro" for a file such
    // as the TaskProlog. Mounted at the same path.
    std::vector<std::string> system_mounts;
    std::vector<std::string> devices;  // the step's device files
    bool writable = false;             // --trellis-writable
    // The step's NVIDIA GPUs on this node, by index in PCI order (as CDI's specs name them:
    // cdi::plan_step_gpus).
    std::vector<int> gpus;
    // The job's REGISTRY_AUTH_FILE (a path, never its contents): prepare runs with a clean
    // environment, and an import reads the user's credentials from there, else from
    // ~/.config/containers/auth.json.
    std::string auth_file;
    // "JOB.STEP": srun may have sent the image to this node's cache for the step (broadcast.hpp).
    std::string sent;
};

// How long the plugin and launch wait for prepare: a registry image or an archive may be
// imported first, which takes minutes for a large image on its first use on the node.
std::chrono::seconds prepare_limit(const StepContainerRequest& request);

// The request checked against the configuration (image_policy), as the calling user.
// Throws PolicyError (refused) or UsageError (malformed).
ContainerSpec checked_container_spec(const StepContainerRequest& request, const config::Config& config);

// The processes that must run as long as the container is used: Apptainer for a .sif image,
// the FUSE daemons that serve a squashfs image. None for an OCI bundle.
struct ContainerHelpers {
    pid_t apptainer = 0;
    std::vector<pid_t> fuse_daemons;
    bool any() const { return apptainer || !fuse_daemons.empty(); }
    void stop() const;
};

// Makes the container around the calling process (never root's: it refuses uid 0). Throws
// ContainerError.
ContainerHelpers enter_container(const ContainerSpec& spec);

// The agent's command line that prepares `request` (for HeldContainer::make).
std::vector<std::string> prepare_command(const std::string& agent, const StepContainerRequest& request,
                                         const std::string& config_path);

// Where trellis-pause is installed (beside the agent in a build tree).
std::string pause_program();

}  // namespace trellis::agent
