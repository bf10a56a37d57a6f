// SPDX-License-Identifier: Apache-2.0
// The transport a job asked for: tcp, verbs, shm (shared memory between the ranks of a node,
// TCP to the others), or auto (verbs when an RDMA device has an active port, else shm). Null
// for a single process.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/cli.hpp"
#include "trainer/comm/tcp_transport.hpp"
#include "trainer/comm/verbs_device.hpp"

namespace trellis::comm {

enum class TransportKind { tcp, verbs, shm, automatic };
// Its spellings: tcp, verbs, shm, auto.
const cli::Choices<TransportKind>& transport_kinds();

// The transports' options from the binding the plugin (or trellis-agent launch) exported, so
// that the transports themselves never read the environment: TCP advertises the address of
// the first interface of NCCL_SOCKET_IFNAME (the HCA's IPoIB), verbs uses the rank's own HCA
// (TRELLIS_HCA, else the first of the node's NCCL_IB_HCA) and TRELLIS_IB_GID_INDEX.
TcpOptions with_binding(TcpOptions tcp);
VerbsOptions verbs_options_from_binding();

// Throws CommError when it cannot be set up. verbs_options is called only when verbs is chosen,
// so that a setting meant for verbs (a bad TRELLIS_IB_GID_INDEX) cannot fail a TCP run.
std::unique_ptr<Transport> make_transport(TransportKind kind, Wireup& wireup, const TcpOptions& tcp,
                                          const std::function<VerbsOptions()>& verbs_options);

}  // namespace trellis::comm
