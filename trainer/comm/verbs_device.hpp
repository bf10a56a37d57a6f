// The InfiniBand/RoCE device a rank uses: chosen from the binding (TRELLIS_HCA, or NCCL_IB_HCA
// as the plugin sets it: "[=]NAME[:PORT][,...]", first entry), else the first device with an
// active port; and on RoCE the GID of a RoCE v2 IPv4 address (TRELLIS_IB_GID_INDEX overrides).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace trellis::comm {

struct VerbsEndpoint {
    std::string device;
    std::uint8_t port = 1;
    int gid_index = -1;  // -1: InfiniBand, addressed by LID
    ibv_gid gid{};
    std::uint16_t lid = 0;
    ibv_mtu mtu = IBV_MTU_1024;
};

// Opens the device (throws CommError naming the device and what is wrong). Caller owns the
// context (ibv_close_device).
ibv_context* open_verbs_device(VerbsEndpoint& endpoint);

// True when some RDMA device has an active port (for --transport auto).
bool verbs_device_available();

}  // namespace trellis::comm
