// SPDX-License-Identifier: Apache-2.0
#include "topology/pci.hpp"

#include <cstdio>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::topology {

PciAddress PciAddress::parse(std::string_view text) {
    PciAddress a;
    std::string s(text);
    int consumed = 0;
    if (std::sscanf(s.c_str(), "%x:%x:%x.%x%n", &a.domain, &a.bus, &a.device, &a.function, &consumed) == 4 &&
        consumed == static_cast<int>(s.size()))
        return a;
    a = {};
    if (std::sscanf(s.c_str(), "%x:%x.%x%n", &a.bus, &a.device, &a.function, &consumed) == 3 &&
        consumed == static_cast<int>(s.size()))
        return a;
    throw UsageError("bad PCI address '" + s + "' (accepted: DDDD:BB:DD.F or BB:DD.F, hexadecimal)");
}

std::string PciAddress::to_string() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, device, function);
    return buf;
}

}  // namespace trellis::topology
