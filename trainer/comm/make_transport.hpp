// The transport a job asked for: tcp, verbs, or auto (verbs when an RDMA device has an active
// port, else TCP). Null for a single process.
#pragma once

#include <memory>
#include <string>

#include "common/cli.hpp"
#include "trainer/comm/tcp_transport.hpp"

namespace trellis::comm {

enum class TransportKind { tcp, verbs, automatic };
// Its spellings: tcp, verbs, auto.
const cli::Choices<TransportKind>& transport_kinds();

// Throws CommError when it cannot be set up.
std::unique_ptr<Transport> make_transport(TransportKind kind, Wireup& wireup, const TcpOptions& tcp);

}  // namespace trellis::comm
