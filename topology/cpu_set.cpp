// SPDX-License-Identifier: Apache-2.0
#include "topology/cpu_set.hpp"

#include <charconv>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::topology {
namespace {

int parse_cpu_number(std::string_view text, std::string_view whole) {
    int value = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0 || value > 1 << 20)
        throw UsageError("bad CPU list '" + std::string(whole) + "': '" + std::string(text) +
                         "' is not a CPU number (accepted: lists like 0-3,8)");
    return value;
}

}  // namespace

CpuSet CpuSet::parse(std::string_view list) {
    CpuSet set;
    if (list.empty()) return set;
    size_t start = 0;
    while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string_view::npos) comma = list.size();
        std::string_view item = list.substr(start, comma - start);
        size_t dash = item.find('-');
        if (dash == std::string_view::npos) {
            set.add(parse_cpu_number(item, list));
        } else {
            int first = parse_cpu_number(item.substr(0, dash), list);
            int last = parse_cpu_number(item.substr(dash + 1), list);
            if (last < first)
                throw UsageError("bad CPU list '" + std::string(list) + "': range '" + std::string(item) +
                                 "' runs backwards");
            set.add_range(first, last);
        }
        start = comma + 1;
    }
    return set;
}

void CpuSet::add_range(int first, int last) {
    for (int cpu = first; cpu <= last; ++cpu) cpus_.insert(cpu);
}

bool CpuSet::contains(const CpuSet& other) const {
    for (int cpu : other.cpus_)
        if (!contains(cpu)) return false;
    return true;
}

bool CpuSet::intersects(const CpuSet& other) const {
    for (int cpu : other.cpus_)
        if (contains(cpu)) return true;
    return false;
}

CpuSet CpuSet::operator&(const CpuSet& other) const {
    CpuSet result;
    for (int cpu : cpus_)
        if (other.contains(cpu)) result.add(cpu);
    return result;
}

CpuSet CpuSet::operator|(const CpuSet& other) const {
    CpuSet result = *this;
    for (int cpu : other.cpus_) result.add(cpu);
    return result;
}

CpuSet CpuSet::operator-(const CpuSet& other) const {
    CpuSet result;
    for (int cpu : cpus_)
        if (!other.contains(cpu)) result.add(cpu);
    return result;
}

std::string CpuSet::to_string() const {
    std::string out;
    auto it = cpus_.begin();
    while (it != cpus_.end()) {
        int first = *it, last = *it;
        for (++it; it != cpus_.end() && *it == last + 1; ++it) last = *it;
        if (!out.empty()) out += ',';
        out += std::to_string(first);
        if (last != first) out += '-' + std::to_string(last);
    }
    return out;
}

}  // namespace trellis::topology
