// SPDX-License-Identifier: Apache-2.0
// The CDI specs an administrator installed: every *.json, *.yaml and *.yml file in the
// configured folders ([container] cdi_dirs), read in folder order and by file name, a later
// one replacing an earlier one's device of the same kind and name (the specification's rule:
// /var/run/cdi, generated at boot, overrides /etc/cdi).
//
// Specs decide what is bound into containers, so only the administrator's are read: a folder
// or file that is not owned by root (or that anyone else can write) is refused by name, as is
// a folder reached through a symbolic link to such a place. A folder that does not exist is
// not an error (most nodes have only one of the two).
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "agent/container/cdi/spec.hpp"

namespace trellis::agent::cdi {

struct SpecSet {
    std::vector<Spec> specs;           // in reading order
    std::vector<std::string> folders;  // the folders that were read
    std::vector<std::string> notes;    // replaced devices, for the verbose report

    // The spec whose device KIND=NAME is in force (the last read that has it), or null.
    const Spec* find(const std::string& kind, const std::string& name) const;
    bool has_kind(const std::string& kind) const;
};

// trusted_owner: the uid a folder and its files must belong to (root; tests pass their own).
// Throws Refused naming the folder or file and the rule; UsageError for a spec that does not parse.
SpecSet load_specs(const std::vector<std::string>& folders, uid_t trusted_owner = 0);

}  // namespace trellis::agent::cdi
