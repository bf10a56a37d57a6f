// SPDX-License-Identifier: Apache-2.0
// The command-line toolkit every program uses: an option table (name, value placeholder, help,
// setter) that parses "--name VALUE", "--name=VALUE" and flags and generates --help, and the
// shared value parsers. Every refusal is a UsageError that names the option, the value and
// what is accepted.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace trellis::cli {

// "invalid value 'VALUE' for WHAT (accepted: ACCEPTED)".
[[noreturn]] void refuse(std::string_view what, std::string_view value, std::string_view accepted);

// A whole number in [low, high]; `what` names the option or variable it came from.
std::int64_t parse_integer(std::string_view text, std::string_view what, std::int64_t low,
                           std::int64_t high = std::numeric_limits<std::int64_t>::max());
std::uint64_t parse_unsigned(std::string_view text, std::string_view what);

template <std::integral Int>
Int parse_int(std::string_view text, std::string_view what, Int low = std::numeric_limits<Int>::min(),
              Int high = std::numeric_limits<Int>::max()) {
    return Int(parse_integer(text, what, std::int64_t(low), std::int64_t(high)));
}

// A finite number of at least `low` (above it when `above`), below `high` when given.
double parse_real(std::string_view text, std::string_view what, double low, bool above = false,
                  double high = std::numeric_limits<double>::infinity());

// A byte count with an optional K, M or G (powers of 1024), at least 1.
std::size_t parse_size(std::string_view text, std::string_view what);

// Every item between separators, empty ones included ("" gives one empty item).
std::vector<std::string> split(std::string_view text, char separator = ',');

// "a, b, c": the accepted names of a choice, for messages and help.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// One value out of a fixed set of names (an enum's spellings, written in one place).
template <typename Value>
struct Choices {
    std::vector<std::pair<std::string, Value>> names;

    Value parse(std::string_view text, std::string_view what) const {
        for (const auto& [name, value] : names)
            if (name == text) return value;
        refuse(what, text, accepted());
    }
    const std::string& name(Value value) const {
        for (const auto& entry : names)
            if (entry.second == value) return entry.first;
        throw std::logic_error("a value without a name");
    }
    std::string accepted() const {
        std::vector<std::string> list;
        for (const auto& entry : names) list.push_back(entry.first);
        return join(list);
    }
};

struct Option {
    std::string name;         // "--batch-size"
    std::string placeholder;  // "B"; empty for a flag
    std::string help;         // further lines are indented under the first
    std::function<void(const std::string& value)> set;
};

class OptionTable {
public:
    // `see` names where the options are described ("trellis-train --help").
    explicit OptionTable(std::string see) : see_(std::move(see)) {}

    OptionTable& section(std::string title);
    OptionTable& value(std::string name, std::string placeholder, std::string help,
                       std::function<void(const std::string&)> set);
    OptionTable& flag(std::string name, std::string help, std::function<void()> set);

    enum class Rest { refuse, command };
    // Applies every option. With Rest::command, the first argument that is not an option (or
    // everything after "--") is returned as a command; with Rest::refuse it is an error.
    std::vector<std::string> parse(const std::vector<std::string>& args, Rest rest = Rest::refuse) const;

    bool knows(std::string_view name) const { return find(name) != nullptr; }

    // The table as help text: a line per option, the help in a column, section titles.
    std::string help() const;

private:
    const Option* find(std::string_view name) const;
    struct Entry {
        std::string title;  // a section heading when set
        Option option;
    };
    std::string see_;
    std::vector<Entry> entries_;
};

}  // namespace trellis::cli
