// SPDX-License-Identifier: Apache-2.0
// The InfiniBand/RoCE device a rank uses: the one its caller names (from the binding), else the
// first device with an active port; and on RoCE the GID of a RoCE v2 IPv4 address, unless
// the caller names one.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>

#include "trainer/comm/verbs_resources.hpp"

namespace trellis::comm {

struct VerbsEndpoint {
    std::string device;
    std::uint8_t port = 1;
    int gid_index = -1;  // -1: InfiniBand, addressed by LID
    ibv_gid gid{};
    std::uint16_t lid = 0;
    ibv_mtu mtu = IBV_MTU_1024;
};

struct VerbsOptions {
    std::string device;  // empty: the first with an active port
    std::uint8_t port = 1;
    std::optional<int> gid_index;  // RoCE: default, the first RoCE v2 GID with an IPv4 address
};

// Opens the device (throws CommError naming the device and what is wrong).
VerbsContext open_verbs_device(VerbsEndpoint& endpoint, const VerbsOptions& options);

// True when some RDMA device has an active port (for --transport auto).
bool verbs_device_available();

}  // namespace trellis::comm
