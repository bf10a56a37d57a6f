// The transport a job asked for: tcp, verbs, or auto (verbs when an RDMA device has an active
// port, else TCP). Null for a single process.
#pragma once

#include <memory>
#include <string>

#include "common/error.hpp"
#include "trainer/comm/tcp_transport.hpp"

namespace trellis::comm {

// Throws UsageError for an unknown kind, CommError when it cannot be set up.
std::unique_ptr<Transport> make_transport(const std::string& kind, Wireup& wireup, const TcpOptions& tcp);

}  // namespace trellis::comm
