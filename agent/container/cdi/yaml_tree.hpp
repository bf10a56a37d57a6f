// SPDX-License-Identifier: Apache-2.0
// A YAML (or JSON: YAML 1.1 reads JSON documents too) document as a plain tree, read with
// libyaml, keeping the line of every node so that messages can point into the file.
#pragma once

#include <string>
#include <vector>

namespace trellis::agent::cdi {

struct YamlEntry;

struct YamlNode {
    enum class Kind { scalar, sequence, mapping };
    Kind kind = Kind::scalar;
    std::string scalar;
    bool quoted = false;             // a quoted scalar is always a string; a plain one may be a number or null
    int line = 0;                    // 1-based
    std::vector<YamlNode> items;     // sequence
    std::vector<YamlEntry> entries;  // mapping, in file order

    // plain null, ~ or an empty plain scalar: what YAML means by "no value"
    bool is_null() const;
};

struct YamlEntry {
    std::string key;
    YamlNode value;
};

// Throws UsageError naming `origin` and the line when the text is not one YAML document
// (a second document, a non-scalar key or a tree blown up by aliases are refused).
YamlNode parse_yaml(const std::string& text, const std::string& origin);

}  // namespace trellis::agent::cdi
