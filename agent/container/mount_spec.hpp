// Bind mounts users ask for with --trellis-mounts / --mounts: "SRC:DST[:ro|rw],...". Pure
// parsing; what may be mounted is image_policy's business.
#pragma once

#include <string>
#include <vector>

namespace trellis::agent {

struct Mount {
    std::string source;       // a host path
    std::string destination;  // the path inside the container
    bool read_only = false;
};

// Throws std::invalid_argument naming the entry and what is accepted.
std::vector<Mount> parse_mounts(const std::string& spec);
std::string format_mount(const Mount& mount);  // back to "SRC:DST[:ro]"

}  // namespace trellis::agent
