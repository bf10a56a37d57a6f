// SPDX-License-Identifier: Apache-2.0
// Bind mounts users ask for with --trellis-mounts / --mounts: "SRC:DST[:ro|rw],...". Parsing,
// and the destinations no user may take; what may be mounted is image_policy's business.
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"

namespace trellis::agent {

struct Mount {
    std::string source;       // a host path
    std::string destination;  // the path inside the container
    bool read_only = false;
};

// Throws UsageError naming the entry and what is accepted: relative paths, '..',
// control characters, and destinations that belong to the container itself (see
// check_destination).
std::vector<Mount> parse_mounts(const std::string& spec);
std::string format_mount(const Mount& mount);  // back to "SRC:DST[:ro]"

// A destination the container itself provides cannot be a user's: /, /dev and below, /proc,
// /sys, /etc/hosts and /etc/resolv.conf, or a folder above any of them (a mount at /etc
// would cover the host's name files). Throws UsageError naming the rule.
void check_destination(const std::string& destination);

// Throws UsageError when `value` holds a control character (a newline would
// forge lines in Slurm's log): `what` names the value.
void refuse_control_characters(const std::string& value, const std::string& what);

}  // namespace trellis::agent
