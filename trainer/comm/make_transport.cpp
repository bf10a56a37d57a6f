// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/make_transport.hpp"

#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/host.hpp"
#include "trainer/comm/shared_memory_transport.hpp"
#include "trainer/comm/socket.hpp"
#include "trainer/comm/verbs_transport.hpp"

namespace trellis::comm {

const cli::Choices<TransportKind>& transport_kinds() {
    static const cli::Choices<TransportKind> choices{{{"tcp", TransportKind::tcp},
                                                      {"verbs", TransportKind::verbs},
                                                      {"shm", TransportKind::shm},
                                                      {"auto", TransportKind::automatic}}};
    return choices;
}

namespace {

// The first entry of a list such as NCCL_IB_HCA's: "[=]NAME[:PORT][,...]" ("" when unset, or an
// exclusion list "^..." that names nothing to use).
std::string first_entry(const char* variable) {
    const char* text = env_value(variable);
    if (!text || text[0] == '^') return "";
    std::string first = cli::split(text).front();
    return first.starts_with("=") ? first.substr(1) : first;
}

}  // namespace

TcpOptions with_binding(TcpOptions tcp) {
    if (tcp.interface_address.empty())
        if (auto interface = first_entry(env::nccl_socket_ifname.name); !interface.empty())
            tcp.interface_address = interface_ipv4(interface);
    return tcp;
}

VerbsOptions verbs_options_from_binding() {
    // The rank's own HCA first; NCCL_IB_HCA is the node's set, the same for every rank, so its
    // first is only a fallback.
    auto hca = first_entry(env::hca.name);
    if (hca.empty()) hca = first_entry(env::nccl_ib_hca.name);
    VerbsOptions options;
    if (!hca.empty() && hca != "auto") {
        auto parts = cli::split(hca, ':');
        options.device = parts[0];
        if (parts.size() > 1) options.port = cli::parse_int<std::uint8_t>(parts[1], "the port of " + hca, 1);
    }
    if (const char* index = env_value(env::ib_gid_index.name))
        options.gid_index = cli::parse_int(index, env::ib_gid_index.name, 0, 255);
    return options;
}

std::unique_ptr<Transport> make_transport(TransportKind kind, Wireup& wireup, const TcpOptions& tcp,
                                          const std::function<VerbsOptions()>& verbs_options) {
    if (wireup.identity().size == 1) return nullptr;
    bool use_verbs = kind == TransportKind::verbs || (kind == TransportKind::automatic && verbs_device_available());
    if (use_verbs) return std::make_unique<VerbsTransport>(wireup, tcp, verbs_options());
    if (kind == TransportKind::shm || kind == TransportKind::automatic)
        return std::make_unique<SharedMemoryTransport>(wireup, tcp);
    return std::make_unique<TcpTransport>(wireup, tcp);
}

}  // namespace trellis::comm
