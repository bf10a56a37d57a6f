// SPDX-License-Identifier: Apache-2.0
// What a user asks for with --trellis-bind, --trellis-hca, --trellis-gpus, --trellis-memory,
// --trellis-wireup, --trellis-verbose, --trellis-image and --trellis-mounts (or the TRELLIS_*
// environment variables of the same names). Pure parsing: the messages say what is accepted,
// and srun prints them before anything is launched.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/binding/wireup.hpp"
#include "config/config.hpp"
#include "common/error.hpp"
#include "topology/plan.hpp"

namespace trellis::spank {

struct UserChoices {
    std::optional<topology::Policy> policy;  // unset: the configured policy
    bool verbose = false;
    std::optional<std::vector<topology::HcaRequest>> hcas;  // unset: auto
    std::optional<bool> share_gpus;                         // unset: the configured choice
    std::optional<config::MemoryPolicy> memory;             // unset: the configured policy
    std::optional<agent::WireupChoice> wireup;              // unset: the configured default
    std::string image;                                      // empty: no container
    std::string mounts;                                     // SRC:DST[:ro],... (checked syntax)
    bool writable = false;                                  // a throw-away writable root
    std::vector<std::string> keep_env;                      // names whose job value beats the image's Env
    bool entrypoint = false;                                // run the image's Entrypoint first
};

// "closest", "none", "closest,verbose", "verbose". Throws UsageError.
void parse_bind_option(const std::string& value, UserChoices& choices);
// "auto" or "mlx5_0[:PORT],mlx5_1". Throws UsageError.
void parse_hca_option(const std::string& value, UserChoices& choices);
// --trellis-gpus: own (each task sees its GPUs) or step (all of the step's, its own first).
void parse_gpus_option(const std::string& value, UserChoices& choices);
// --trellis-memory: bind, preferred or none.
void parse_memory_option(const std::string& value, UserChoices& choices);
// --trellis-wireup: none, torch, tf[:chief][:ps=N], or torch,tf...
void parse_wireup_option(const std::string& value, UserChoices& choices);
// TRELLIS_VERBOSE: 1/yes/true/on or 0/no/false/off (empty counts as on, like a bare flag).
void parse_verbose_value(const std::string& value, UserChoices& choices);
// --trellis-image: an image reference, docker://..., oci-archive:PATH, docker-archive:PATH or
// an absolute path (parse_image_reference; whether it is allowed is checked against the
// configuration, once it is loaded). Throws UsageError.
void parse_image_option(const std::string& value, UserChoices& choices);
// --trellis-mounts: SRC:DST[:ro|rw],... Throws UsageError.
void parse_mounts_option(const std::string& value, UserChoices& choices);
// --trellis-writable, --trellis-entrypoint (flags; their variables take 1/yes/true/on or
// 0/no/false/off). Throws UsageError.
void parse_writable_value(const std::string& value, UserChoices& choices);
void parse_entrypoint_value(const std::string& value, UserChoices& choices);
// --trellis-env: NAME,... Throws UsageError.
void parse_env_option(const std::string& value, UserChoices& choices);

}  // namespace trellis::spank
