// SPDX-License-Identifier: Apache-2.0
#include "common/spelling.hpp"

#include <algorithm>

namespace trellis::cli {

int typing_distance(std::string_view a, std::string_view b) {
    // Rows i-2, i-1 and i of the usual table of prefix distances.
    std::vector<int> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = int(j);
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = int(i);
        for (std::size_t j = 1; j <= b.size(); ++j) {
            int replaced = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, replaced});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                current[j] = std::min(current[j], before[j - 2] + 1);
        }
        before.swap(previous);
        previous.swap(current);
    }
    return previous[b.size()];
}

std::optional<std::string> nearest_name(std::string_view typed, const std::vector<std::string>& known) {
    auto letters = typed.substr(std::min(typed.find_first_not_of('-'), typed.size()));
    int limit = 1 + int(letters.size()) / 5;
    std::optional<std::string> nearest;
    int best = limit + 1;
    for (const auto& name : known)
        if (int distance = typing_distance(typed, name); distance < best) best = distance, nearest = name;
    return nearest;
}

}  // namespace trellis::cli
