// SPDX-License-Identifier: Apache-2.0
#include "common/cli.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/spelling.hpp"

namespace trellis::cli {

void refuse(std::string_view what, std::string_view value, std::string_view accepted) {
    throw UsageError("invalid value '" + std::string(value) + "' for " + std::string(what) +
                     " (accepted: " + std::string(accepted) + ")");
}

namespace {

std::string whole_numbers(std::int64_t low, std::int64_t high) {
    if (high >= std::numeric_limits<std::int32_t>::max())  // no bound a person would type
        return "a whole number of at least " + std::to_string(low);
    return "a whole number from " + std::to_string(low) + " to " + std::to_string(high);
}

std::string shortest(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

template <typename Number>
bool read_all(std::string_view text, Number& value) {
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::int64_t parse_integer(std::string_view text, std::string_view what, std::int64_t low, std::int64_t high) {
    std::int64_t value = 0;
    if (!read_all(text, value) || value < low || value > high) refuse(what, text, whole_numbers(low, high));
    return value;
}

std::uint64_t parse_unsigned(std::string_view text, std::string_view what) {
    std::uint64_t value = 0;
    if (!read_all(text, value)) refuse(what, text, "a whole number of at least 0");
    return value;
}

double parse_real(std::string_view text, std::string_view what, double low, bool above, double high) {
    double value = 0;
    bool fits = read_all(text, value) && std::isfinite(value) && (above ? value > low : value >= low) && value < high;
    if (!fits) {
        std::string range = (above ? "a number above " : "a number of at least ") + shortest(low);
        if (std::isfinite(high)) range += " and below " + shortest(high);
        refuse(what, text, range);
    }
    return value;
}

std::size_t parse_size(std::string_view text, std::string_view what) {
    std::string_view digits = text, unit;
    if (!text.empty() && std::string_view("BKMG").find(text.back()) != std::string_view::npos) {
        digits = text.substr(0, text.size() - 1);
        unit = text.substr(text.size() - 1);
    }
    std::size_t value = 0;
    int shift = unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : 0;
    if (!read_all(digits, value) || value == 0 || value > (std::numeric_limits<std::size_t>::max() >> shift))
        refuse(what, text, "a byte count with an optional K, M or G, such as 64K or 1M");
    return value << shift;
}

std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> items;
    while (true) {
        auto at = text.find(separator);
        items.emplace_back(text.substr(0, at));
        if (at == std::string_view::npos) return items;
        text.remove_prefix(at + 1);
    }
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string joined;
    for (const auto& item : items) joined += (joined.empty() ? "" : std::string(separator)) + item;
    return joined;
}

OptionTable& OptionTable::section(std::string title) {
    entries_.push_back({std::move(title), {}});
    return *this;
}

OptionTable& OptionTable::value(std::string name, std::string placeholder, std::string help,
                                std::function<void(const std::string&)> set) {
    entries_.push_back({{}, {std::move(name), std::move(placeholder), std::move(help), std::move(set)}});
    return *this;
}

OptionTable& OptionTable::flag(std::string name, std::string help, std::function<void()> set) {
    auto call = [set = std::move(set)](const std::string&) { set(); };
    entries_.push_back({{}, {std::move(name), {}, std::move(help), std::move(call)}});
    return *this;
}

const Option* OptionTable::find(std::string_view name) const {
    for (const auto& entry : entries_)
        if (entry.title.empty() && entry.option.name == name) return &entry.option;
    return nullptr;
}

std::vector<std::string> OptionTable::parse(const std::vector<std::string>& args, Rest rest) const {
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string name = args[i], value;
        if (name == "--" || name.empty() || name[0] != '-') {
            if (rest == Rest::refuse) throw UsageError("unexpected argument '" + name + "'");
            return {args.begin() + long(i) + (name == "--"), args.end()};
        }
        auto equals = name.find('=');
        bool inline_value = name.rfind("--", 0) == 0 && equals != std::string::npos;
        if (inline_value) {
            value = name.substr(equals + 1);
            name.resize(equals);
        }
        const Option* option = find(name);
        if (!option) {
            std::vector<std::string> known;
            for (const auto& entry : entries_)
                if (entry.title.empty()) known.push_back(entry.option.name);
            auto nearest = nearest_name(name, known);
            throw UsageError("unknown option '" + name + "'" + (nearest ? ": did you mean " + *nearest + "?" : "") +
                             " (see " + see_ + ")");
        }
        if (option->placeholder.empty()) {
            if (inline_value) throw UsageError(name + " takes no value");
        } else if (!inline_value) {
            if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
            value = args[++i];
        }
        option->set(value);
    }
    return {};
}

std::string OptionTable::help() const {
    constexpr std::size_t column = 26;
    std::string text;
    for (const auto& entry : entries_) {
        if (!entry.title.empty()) {
            text += entry.title + "\n";
            continue;
        }
        const auto& option = entry.option;
        std::string line = "  " + option.name + (option.placeholder.empty() ? "" : " " + option.placeholder);
        line += line.size() + 2 > column ? "\n" + std::string(column, ' ') : std::string(column - line.size(), ' ');
        for (const auto& part : split(option.help, '\n'))
            text += (line.empty() ? std::string(column, ' ') : line) + part + "\n", line.clear();
    }
    return text;
}

}  // namespace trellis::cli
