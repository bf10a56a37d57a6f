// SPDX-License-Identifier: Apache-2.0
#include "trainer/models/architecture.hpp"

#include "common/error.hpp"
#include "trainer/models/resnet.hpp"
#include "trainer/models/tf_models.hpp"

namespace trellis::models {

const std::vector<Architecture>& architectures() {
    static const std::vector<Architecture> all = [] {
        auto list = resnets();
        for (auto& model : {alexnet(), vgg16(), googlenet(), inception3(), inception4()}) list.push_back(model);
        return list;
    }();
    return all;
}

std::string architecture_names() {
    std::string names;
    for (const auto& model : architectures()) names += (names.empty() ? "" : ", ") + model.name;
    return names;
}

const Architecture& find_architecture(const std::string& name) {
    for (const auto& model : architectures())
        if (model.name == name) return model;
    throw UsageError("unknown model '" + name + "' (accepted: " + architecture_names() + ")");
}

}  // namespace trellis::models
