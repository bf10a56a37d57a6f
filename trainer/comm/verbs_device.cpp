// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/verbs_device.hpp"

#include <algorithm>
#include <cstring>

#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

bool port_active(ibv_context* context, std::uint8_t port, ibv_port_attr& attr) {
    return ibv_query_port(context, port, &attr) == 0 && attr.state == IBV_PORT_ACTIVE;
}

// The device list, freed when it goes.
struct DeviceList {
    DeviceList() : devices(ibv_get_device_list(&count)) {}
    ~DeviceList() {
        if (devices) ibv_free_device_list(devices);
    }
    int count = 0;
    ibv_device** devices;
};

}  // namespace

bool verbs_device_available() {
    DeviceList list;
    for (int i = 0; list.devices && i < list.count; ++i) {
        VerbsContext context(ibv_open_device(list.devices[i]));
        ibv_port_attr attr;
        if (context && port_active(context.get(), 1, attr)) return true;
    }
    return false;
}

VerbsContext open_verbs_device(VerbsEndpoint& endpoint, const VerbsOptions& options) {
    DeviceList list;
    if (!list.devices || list.count == 0)
        throw CommError("verbs: no RDMA device (ibv_get_device_list found none; is the driver loaded?)");
    const std::string& wanted = options.device;
    bool explicit_device = !wanted.empty();
    endpoint.port = options.port;
    VerbsContext context;
    ibv_port_attr attr{};
    std::string seen;
    for (int i = 0; i < list.count && !context; ++i) {
        std::string name = ibv_get_device_name(list.devices[i]);
        seen += (seen.empty() ? "" : ", ") + name;
        if (explicit_device && name != wanted) continue;
        VerbsContext candidate(ibv_open_device(list.devices[i]));
        if (candidate && port_active(candidate.get(), endpoint.port, attr)) {
            context = std::move(candidate);
            endpoint.device = name;
        }
    }
    if (!context)
        throw CommError("verbs: " +
                        (explicit_device ? "device " + wanted + " port " + std::to_string(endpoint.port)
                                         : std::string("no device")) +
                        " with an ACTIVE port (devices: " + seen + ")");
    endpoint.lid = attr.lid;
    endpoint.mtu = attr.active_mtu;
    if (attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        // RoCE: a RoCE v2 GID holding an IPv4-mapped address routes over UDP/IP.
        endpoint.gid_index = options.gid_index.value_or(-1);
        for (int i = 0; endpoint.gid_index < 0 && i < attr.gid_tbl_len; ++i) {
            ibv_gid_entry entry{};
            if (ibv_query_gid_ex(context.get(), endpoint.port, std::uint32_t(i), &entry, 0) != 0) continue;
            const auto* raw = entry.gid.raw;
            bool ipv4 =
                std::all_of(raw, raw + 10, [](std::uint8_t b) { return b == 0; }) && raw[10] == 0xff && raw[11] == 0xff;
            if (entry.gid_type == IBV_GID_TYPE_ROCE_V2 && ipv4) endpoint.gid_index = i;
        }
        if (endpoint.gid_index < 0) endpoint.gid_index = 0;
        if (ibv_query_gid(context.get(), endpoint.port, endpoint.gid_index, &endpoint.gid) != 0)
            throw CommError("verbs: " + endpoint.device + ": cannot read GID " + std::to_string(endpoint.gid_index));
    }
    return context;
}

}  // namespace trellis::comm
