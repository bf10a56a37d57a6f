#include "trainer/comm/verbs_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/environment.hpp"
#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

// "=mlx5_0:1,mlx5_1:1" -> {"mlx5_0", 1}. The rank's own HCA (TRELLIS_HCA) comes first;
// NCCL_IB_HCA is the node's set, the same for every rank, so its first is only a fallback,
// and an exclusion list ("^mlx5_2") names nothing to use.
bool requested_device(std::string& name, std::uint8_t& port) {
    const char* text = std::getenv(env::hca.name);
    if (!text || !*text) text = std::getenv("NCCL_IB_HCA");
    if (!text || !*text || text[0] == '^') return false;
    std::string first = text;
    if (!first.empty() && (first[0] == '=' || first[0] == '^')) first.erase(0, 1);
    first = first.substr(0, first.find(','));
    auto colon = first.find(':');
    name = first.substr(0, colon);
    if (colon != std::string::npos) port = std::uint8_t(std::atoi(first.c_str() + colon + 1));
    return !name.empty() && name != "auto";
}

bool port_active(ibv_context* context, std::uint8_t port, ibv_port_attr& attr) {
    return ibv_query_port(context, port, &attr) == 0 && attr.state == IBV_PORT_ACTIVE;
}

}  // namespace

bool verbs_device_available() {
    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    bool found = false;
    for (int i = 0; list && i < count && !found; ++i)
        if (ibv_context* context = ibv_open_device(list[i])) {
            ibv_port_attr attr;
            found = port_active(context, 1, attr);
            ibv_close_device(context);
        }
    if (list) ibv_free_device_list(list);
    return found;
}

ibv_context* open_verbs_device(VerbsEndpoint& endpoint) {
    int count = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (!list || count == 0) {
        if (list) ibv_free_device_list(list);
        throw CommError("verbs: no RDMA device (ibv_get_device_list found none; is the driver loaded?)");
    }
    std::string wanted;
    bool explicit_device = requested_device(wanted, endpoint.port);
    ibv_context* context = nullptr;
    ibv_port_attr attr{};
    std::string seen;
    for (int i = 0; i < count && !context; ++i) {
        std::string name = ibv_get_device_name(list[i]);
        seen += (seen.empty() ? "" : ", ") + name;
        if (explicit_device && name != wanted) continue;
        ibv_context* candidate = ibv_open_device(list[i]);
        if (!candidate) continue;
        if (port_active(candidate, endpoint.port, attr)) {
            context = candidate;
            endpoint.device = name;
        } else {
            ibv_close_device(candidate);
        }
    }
    ibv_free_device_list(list);
    if (!context)
        throw CommError("verbs: " + (explicit_device ? "device " + wanted + " port " + std::to_string(endpoint.port)
                                                     : std::string("no device")) +
                        " with an ACTIVE port (devices: " + seen + ")");
    endpoint.lid = attr.lid;
    endpoint.mtu = attr.active_mtu;
    if (attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        // RoCE: a RoCE v2 GID holding an IPv4-mapped address routes over UDP/IP.
        if (const char* index = std::getenv(env::ib_gid_index.name)) endpoint.gid_index = std::atoi(index);
        for (int i = 0; endpoint.gid_index < 0 && i < attr.gid_tbl_len; ++i) {
            ibv_gid_entry entry{};
            if (ibv_query_gid_ex(context, endpoint.port, std::uint32_t(i), &entry, 0) != 0) continue;
            const auto* raw = entry.gid.raw;
            bool ipv4 = std::all_of(raw, raw + 10, [](std::uint8_t b) { return b == 0; }) && raw[10] == 0xff &&
                        raw[11] == 0xff;
            if (entry.gid_type == IBV_GID_TYPE_ROCE_V2 && ipv4) endpoint.gid_index = i;
        }
        if (endpoint.gid_index < 0) endpoint.gid_index = 0;
        if (ibv_query_gid(context, endpoint.port, endpoint.gid_index, &endpoint.gid) != 0) {
            ibv_close_device(context);
            throw CommError("verbs: " + endpoint.device + ": cannot read GID " + std::to_string(endpoint.gid_index));
        }
    }
    return context;
}

}  // namespace trellis::comm
