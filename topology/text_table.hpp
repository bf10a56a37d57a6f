// SPDX-License-Identifier: Apache-2.0
// Left-aligned text columns, for the human output of trellis-topo and the plugin's report.
#pragma once

#include <string>
#include <vector>

namespace trellis::topology {

class TextTable {
public:
    explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    std::string render(const std::string& indent = "") const;

private:
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace trellis::topology
