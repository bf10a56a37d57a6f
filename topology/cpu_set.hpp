// SPDX-License-Identifier: Apache-2.0
// A set of logical CPU (PU) numbers as the kernel numbers them, in the "0-3,8" list syntax
// that Linux, Slurm and hwloc all print. The planner works on these rather than on hwloc
// bitmaps so that plans can be computed and tested without a loaded topology.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace trellis::topology {

class CpuSet {
public:
    CpuSet() = default;
    CpuSet(std::initializer_list<int> cpus) : cpus_(cpus) {}

    // Parses "0-3,8,10-11". Throws UsageError naming the bad part.
    static CpuSet parse(std::string_view list);

    void add(int cpu) { cpus_.insert(cpu); }
    void add_range(int first, int last);
    bool contains(int cpu) const { return cpus_.count(cpu) != 0; }
    bool contains(const CpuSet& other) const;
    bool intersects(const CpuSet& other) const;
    bool empty() const { return cpus_.empty(); }
    int size() const { return static_cast<int>(cpus_.size()); }
    int first() const { return cpus_.empty() ? -1 : *cpus_.begin(); }

    CpuSet operator&(const CpuSet& other) const;
    CpuSet operator|(const CpuSet& other) const;
    CpuSet operator-(const CpuSet& other) const;
    bool operator==(const CpuSet& other) const = default;
    auto operator<=>(const CpuSet& other) const = default;

    std::string to_string() const;  // "0-3,8"; "" when empty
    const std::set<int>& cpus() const { return cpus_; }
    auto begin() const { return cpus_.begin(); }
    auto end() const { return cpus_.end(); }

private:
    std::set<int> cpus_;
};

}  // namespace trellis::topology
