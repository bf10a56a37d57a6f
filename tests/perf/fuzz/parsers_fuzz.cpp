// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for everything the plugin parses from users and admins: srun option
// values, TRELLIS_* variables, plugstack.conf arguments, trellis.toml text, CPU and HCA lists,
// Slurm's task layout variables, the container checks on images, mounts and their
// destinations, and CDI specs (JSON or YAML); and what a trainer rank reads from whoever
// connects to it: the handshake's claim and a control connection's failure notice.
// Every input must either parse or be refused with an exception of the documented kind.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/binding/wireup.hpp"
#include "config/config.hpp"
#include "agent/image/policy.hpp"
#include "agent/container/cdi/spec_parser.hpp"
#include "common/error.hpp"
#include "common/step_secret.hpp"
#include "spank/options.hpp"
#include "topology/cpu_set.hpp"
#include "topology/plan.hpp"
#include "trainer/comm/failure_notice.hpp"
#include "trainer/comm/handshake.hpp"

using namespace trellis;

template <typename F>
void refused_or_parsed(F&& parse) {
    try {
        parse();
    } catch (const trellis::UsageError&) {  // bad input, configuration errors included
    } catch (const trellis::Refused&) {     // the image policy
    }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    spank::UserChoices choices;
    refused_or_parsed([&] { spank::parse_bind_option(text, choices); });
    refused_or_parsed([&] { spank::parse_hca_option(text, choices); });
    refused_or_parsed([&] { spank::parse_verbose_value(text, choices); });
    refused_or_parsed([&] { spank::parse_image_option(text, choices); });
    refused_or_parsed([&] { spank::parse_mounts_option(text, choices); });
    refused_or_parsed([&] { spank::parse_gpus_option(text, choices); });
    refused_or_parsed([&] { spank::parse_memory_option(text, choices); });
    refused_or_parsed([&] { spank::parse_wireup_option(text, choices); });
    // What Slurm hands a step: SLURM_STEP_TASKS_PER_NODE and SLURM_DISTRIBUTION.
    refused_or_parsed([&] { agent::rank_nodes(text, "block"); });
    refused_or_parsed([&] { agent::rank_nodes("2(x2)", text); });
    refused_or_parsed([&] { topology::CpuSet::parse(text).to_string(); });
    refused_or_parsed([&] { topology::HcaRequest::parse(text); });
    refused_or_parsed([&] { config::parse_config_text(text, "fuzz.toml"); });
    refused_or_parsed([&] { agent::cdi::parse_spec(text, "fuzz.yaml"); });
    // The container checks: against a policy that allows paths under /tmp only.
    config::ContainerConfig container;
    container.allowed_images = {"/tmp/*"};
    container.allowed_mounts = {"/tmp"};
    refused_or_parsed([&] { agent::check_destination(text); });
    refused_or_parsed([&] { agent::check_image(text, container); });
    refused_or_parsed([&] { agent::check_mounts(agent::parse_mounts(text), container); });
    // The same bytes as plugstack.conf arguments, split on spaces as Slurm splits them.
    std::vector<std::string> args;
    size_t start = 0;
    while (start < text.size()) {
        size_t space = text.find(' ', start);
        if (space == std::string::npos) space = text.size();
        if (space > start && text.compare(start, 7, "config=") != 0) args.push_back(text.substr(start, space - start));
        start = space + 1;
    }
    refused_or_parsed([&] { config::load_config(args, "/nonexistent/trellis.toml"); });
    // A stranger's bytes on a rank's port, read as the watcher reads them: never more than the
    // claim wants, then judged; and a control message's text.
    static const comm::JobSecret secret(parse_step_secret(std::string(64, 'a')));
    comm::ClaimReader reader(secret);
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(data);
    for (std::size_t at = 0, n; at < size && reader.wanted() > 0; at += n) {
        n = std::min({reader.wanted(), size - at, std::size_t(1) + data[at] % 64});
        if (!reader.take(bytes + at, n)) break;
    }
    if (reader.wanted() == 0 && reader.proven()) __builtin_trap();  // nobody guesses an HMAC
    if (auto notice = comm::parse_notice(text, 8))
        for (char c : comm::notice_text(*notice))
            if (static_cast<unsigned char>(c) < 0x20) __builtin_trap();
    return 0;
}
