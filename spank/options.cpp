// SPDX-License-Identifier: Apache-2.0
#include "spank/options.hpp"

#include "agent/image/settings.hpp"
#include "agent/container/mount_spec.hpp"

#include <sstream>
#include <stdexcept>

#include "common/cli.hpp"
#include "agent/image/reference.hpp"
#include "common/error.hpp"

namespace trellis::spank {

namespace {
const std::string bind_accepted =
    "accepted: closest or none, optionally followed by ,verbose; or verbose alone, which keeps the configured policy";
}  // namespace

void parse_bind_option(const std::string& value, UserChoices& choices) {
    for (const auto& item : cli::split(value)) {
        if (item == "verbose") {
            choices.verbose = true;
        } else if (item == "closest" || item == "none") {
            choices.policy = topology::parse_policy(item);
        } else {
            throw UsageError("'" + value + "' is not a binding (" + bind_accepted + ")");
        }
    }
}

void parse_hca_option(const std::string& value, UserChoices& choices) {
    if (value == "auto") {
        choices.hcas.reset();
        return;
    }
    std::vector<topology::HcaRequest> hcas;
    for (const auto& item : cli::split(value)) {
        if (item.empty()) throw UsageError("'" + value + "' is not an HCA list (accepted: auto, or NAME[:PORT],...)");
        hcas.push_back(topology::HcaRequest::parse(item));
    }
    choices.hcas = hcas;
}

void parse_gpus_option(const std::string& value, UserChoices& choices) {
    if (value != "own" && value != "step")
        throw UsageError("'" + value +
                         "' is not a GPU visibility (accepted: own, each task sees its own "
                         "GPUs; step, each task sees all of the step's GPUs on its node, its own first)");
    choices.share_gpus = value == "step";
}

void parse_memory_option(const std::string& value, UserChoices& choices) {
    choices.memory = config::parse_memory_policy(value);
}

void parse_wireup_option(const std::string& value, UserChoices& choices) {
    choices.wireup = agent::parse_wireup(value);
}

void parse_verbose_value(const std::string& value, UserChoices& choices) {
    if (value.empty() || value == "1" || value == "yes" || value == "true" || value == "on")
        choices.verbose = true;
    else if (value == "0" || value == "no" || value == "false" || value == "off")
        choices.verbose = false;
    else
        throw UsageError("'" + value + "' is not a verbosity (accepted: 1, yes, true, on, 0, no, false, off)");
}

void parse_image_option(const std::string& value, UserChoices& choices) {
    agent::refuse_control_characters(value, "the image path");
    agent::parse_image_reference(value);  // its form; whether it is allowed is check_image's
    choices.image = value;
}

namespace {

bool switch_value(const std::string& value, const char* option) {
    if (value.empty() || value == "1" || value == "yes" || value == "true" || value == "on") return true;
    if (value == "0" || value == "no" || value == "false" || value == "off") return false;
    throw UsageError("'" + value + "' is not a choice for " + option +
                     " (accepted: 1, yes, true, on, 0, no, false, off)");
}

}  // namespace

void parse_writable_value(const std::string& value, UserChoices& choices) {
    choices.writable = switch_value(value, "--trellis-writable");
}

void parse_entrypoint_value(const std::string& value, UserChoices& choices) {
    choices.entrypoint = switch_value(value, "--trellis-entrypoint");
}

void parse_env_option(const std::string& value, UserChoices& choices) {
    choices.keep_env = agent::parse_env_names(value);
}

void parse_mounts_option(const std::string& value, UserChoices& choices) {
    agent::parse_mounts(value);
    choices.mounts = value;
}

}  // namespace trellis::spank
