// SPDX-License-Identifier: Apache-2.0
// The ranks of one node under `trellis-agent launch`: each started with its binding (CPU
// affinity and the plan's environment), its rank variables and, with an image, inside the
// step's container; their output prefixed with the rank; SIGINT, SIGTERM and SIGUSR1 passed
// on; and when one rank fails, the others stopped (SIGTERM, then SIGKILL after a grace time)
// and that rank's status returned.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "topology/cpu_set.hpp"

#include "agent/container/held_container.hpp"
#include "agent/image/settings.hpp"

namespace trellis::agent {

struct RankSpec {
    int rank = 0;
    std::map<std::string, std::string> env;  // set on top of the agent's environment
    std::vector<std::string> unset;          // the enclosing task's binding this rank does not get
    bool first_on_node = false;              // says, once, when the image lacks the working directory
    std::optional<topology::CpuSet> cpus;    // affinity, when bound
    struct Memory {
        config::MemoryPolicy policy = config::MemoryPolicy::none;
        std::vector<int> numa;
    } memory;
};

class RankLauncher {
public:
    // `container` (made from `image`), when given, is joined by every rank before it execs;
    // it outlives the run.
    // The ranks take the image's settings as `choices` say (agent/image/settings.hpp); the job's
    // folder counts as mounted when it is at or under one of `mount_destinations`.
    RankLauncher(std::vector<std::string> command, int grace_seconds, const HeldContainer* container,
                 std::string image = "", SettingsChoices choices = {}, std::vector<std::string> mount_destinations = {})
        : command_(std::move(command)),
          grace_seconds_(grace_seconds),
          container_(container),
          image_(std::move(image)),
          choices_(std::move(choices)),
          mount_destinations_(std::move(mount_destinations)) {}
    // Runs every rank to its end; returns the exit status for the agent: 0 when all
    // succeeded, else the first failed rank's (128 + N for signal N).
    int run(const std::vector<RankSpec>& ranks);

private:
    struct Child;
    pid_t start(const RankSpec& spec, int out_fd, int err_fd);

    std::vector<std::string> command_;
    int grace_seconds_;
    const HeldContainer* container_;
    std::string image_;
    SettingsChoices choices_;
    std::vector<std::string> mount_destinations_;
};

// Variables of the agent's own launch that would mislead the ranks' wireup: the agent's
// rank under Slurm or PMIx is not theirs.
const std::vector<std::string>& rank_variables_to_clear();

}  // namespace trellis::agent
