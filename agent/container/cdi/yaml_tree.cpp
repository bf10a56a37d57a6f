// SPDX-License-Identifier: Apache-2.0
#include "agent/container/cdi/yaml_tree.hpp"

#include <yaml.h>

#include "common/error.hpp"

namespace trellis::agent::cdi {

namespace {

struct Document {
    yaml_document_t document;
    bool loaded = false;
    ~Document() {
        if (loaded) yaml_document_delete(&document);
    }
};

struct Parser {
    yaml_parser_t parser;
    Parser() { yaml_parser_initialize(&parser); }
    ~Parser() { yaml_parser_delete(&parser); }
};

std::string where(const std::string& origin, int line) { return origin + ":" + std::to_string(line); }

// Aliases resolve to shared nodes in libyaml's document model, so a small file could expand
// without bound ("billion laughs"); a spec never comes near these limits.
struct Budget {
    long nodes_left = 200000;
};

YamlNode convert(yaml_document_t& document, yaml_node_t* node, const std::string& origin, int depth, Budget& budget) {
    if (depth > 32 || --budget.nodes_left < 0)
        throw UsageError(where(origin, static_cast<int>(node->start_mark.line) + 1) +
                         ": nested too deeply or too many nodes (aliases?) for a CDI spec");
    YamlNode out;
    out.line = static_cast<int>(node->start_mark.line) + 1;
    switch (node->type) {
    case YAML_SCALAR_NODE:
        out.kind = YamlNode::Kind::scalar;
        out.scalar.assign(reinterpret_cast<const char*>(node->data.scalar.value), node->data.scalar.length);
        out.quoted = node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        break;
    case YAML_SEQUENCE_NODE:
        out.kind = YamlNode::Kind::sequence;
        for (auto* item = node->data.sequence.items.start; item < node->data.sequence.items.top; ++item)
            out.items.push_back(convert(document, yaml_document_get_node(&document, *item), origin, depth + 1, budget));
        break;
    case YAML_MAPPING_NODE:
        out.kind = YamlNode::Kind::mapping;
        for (auto* pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; ++pair) {
            auto* key = yaml_document_get_node(&document, pair->key);
            if (key->type != YAML_SCALAR_NODE)
                throw UsageError(where(origin, key->start_mark.line + 1) + ": a mapping key must be a plain name");
            std::string name(reinterpret_cast<const char*>(key->data.scalar.value), key->data.scalar.length);
            for (const auto& [seen, _] : out.entries)
                if (seen == name)
                    throw UsageError(where(origin, key->start_mark.line + 1) + ": field " + name + " given twice");
            out.entries.push_back(
                {name, convert(document, yaml_document_get_node(&document, pair->value), origin, depth + 1, budget)});
        }
        break;
    default: throw UsageError(where(origin, out.line) + ": empty node");
    }
    return out;
}

}  // namespace

bool YamlNode::is_null() const {
    return kind == Kind::scalar && !quoted &&
           (scalar.empty() || scalar == "~" || scalar == "null" || scalar == "Null" || scalar == "NULL");
}

YamlNode parse_yaml(const std::string& text, const std::string& origin) {
    Parser parser;
    yaml_parser_set_input_string(&parser.parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    Document first;
    if (!yaml_parser_load(&parser.parser, &first.document))
        throw UsageError(where(origin, static_cast<int>(parser.parser.problem_mark.line) + 1) +
                         ": not YAML or JSON: " + (parser.parser.problem ? parser.parser.problem : "unreadable"));
    first.loaded = true;
    auto* root = yaml_document_get_root_node(&first.document);
    if (!root) throw UsageError(origin + ": empty file");
    Budget budget;
    YamlNode tree = convert(first.document, root, origin, 0, budget);
    Document second;
    if (!yaml_parser_load(&parser.parser, &second.document))
        throw UsageError(origin + ": not YAML or JSON after the first document: " +
                         (parser.parser.problem ? parser.parser.problem : "unreadable"));
    second.loaded = true;
    if (yaml_document_get_root_node(&second.document))
        throw UsageError(where(origin, static_cast<int>(second.document.start_mark.line) + 1) +
                         ": a second document; a CDI spec is one");
    return tree;
}

}  // namespace trellis::agent::cdi
