// SPDX-License-Identifier: Apache-2.0
// "Did you mean": the known name nearest to a mistyped one, for refusals of unknown names.
// Nearness counts typing slips: a letter inserted, dropped or replaced, or two neighbours
// swapped (the optimal string alignment distance). A name more than about one slip per five
// letters away gets no suggestion: a wrong guess misleads more than none.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::cli {

// The number of slips that turn `a` into `b`.
int typing_distance(std::string_view a, std::string_view b);

// The nearest of `known` to `typed` within the limit above (the first of equals, in their
// order), or nothing. Leading dashes are not counted in the limit: "--lr" is short.
std::optional<std::string> nearest_name(std::string_view typed, const std::vector<std::string>& known);

}  // namespace trellis::cli
