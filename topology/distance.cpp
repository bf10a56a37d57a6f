// SPDX-License-Identifier: Apache-2.0
#include "topology/distance.hpp"

#include <algorithm>
#include <array>

namespace trellis::topology {

Distance distance(const PciPlace& a, const PciPlace& b) {
    if (a.address == b.address) return Distance::same;

    size_t common = 0;
    while (common < a.bridges.size() && common < b.bridges.size() && a.bridges[common] == b.bridges[common]) ++common;

    if (common == 0) {
        bool same_numa = !a.numa.empty() && a.numa == b.numa;
        return same_numa ? Distance::node : Distance::sys;
    }
    if (a.bridges[common - 1].host) return Distance::phb;

    size_t below_a = a.bridges.size() - common;
    size_t below_b = b.bridges.size() - common;
    return std::max(below_a, below_b) <= 1 ? Distance::pix : Distance::pxb;
}

namespace {
constexpr std::array names = {"X", "PIX", "PXB", "PHB", "NODE", "SYS"};
}

std::string distance_name(Distance d) { return names[static_cast<size_t>(d)]; }

std::optional<Distance> parse_distance(std::string_view name) {
    for (size_t i = 0; i < names.size(); ++i)
        if (name == names[i]) return static_cast<Distance>(i);
    return std::nullopt;
}

}  // namespace trellis::topology
