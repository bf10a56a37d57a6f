#include "trainer/comm/make_transport.hpp"

#include <stdexcept>

#include "common/error.hpp"
#include "trainer/comm/verbs_transport.hpp"

namespace trellis::comm {

std::unique_ptr<Transport> make_transport(const std::string& kind, Wireup& wireup, const TcpOptions& tcp) {
    if (kind != "tcp" && kind != "verbs" && kind != "auto")
        throw UsageError("unknown transport '" + kind + "' (accepted: tcp, verbs, auto)");
    if (wireup.identity().size == 1) return nullptr;
    if (kind == "verbs" || (kind == "auto" && verbs_device_available())) return std::make_unique<VerbsTransport>(wireup, tcp);
    return std::make_unique<TcpTransport>(wireup, tcp);
}

}  // namespace trellis::comm
