#include "trainer/comm/make_transport.hpp"

#include <stdexcept>

#include "common/error.hpp"
#include "trainer/comm/verbs_transport.hpp"

namespace trellis::comm {

const cli::Choices<TransportKind>& transport_kinds() {
    static const cli::Choices<TransportKind> choices{
        {{"tcp", TransportKind::tcp}, {"verbs", TransportKind::verbs}, {"auto", TransportKind::automatic}}};
    return choices;
}

std::unique_ptr<Transport> make_transport(TransportKind kind, Wireup& wireup, const TcpOptions& tcp) {
    if (wireup.identity().size == 1) return nullptr;
    bool verbs = kind == TransportKind::verbs || (kind == TransportKind::automatic && verbs_device_available());
    if (verbs) return std::make_unique<VerbsTransport>(wireup, tcp);
    return std::make_unique<TcpTransport>(wireup, tcp);
}

}  // namespace trellis::comm
