// SPDX-License-Identifier: Apache-2.0
// The networks trellis-train builds, by name: what input each expects and how to build it on
// a backend. ResNets (resnet.cpp) and tf_cnn_benchmarks' other models (alexnet.cpp, vgg.cpp,
// googlenet.cpp, inception3.cpp, inception4.cpp), built from their layer lists.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainer/nn/backend.hpp"
#include "trainer/nn/dropout_mask.hpp"
#include "trainer/nn/sequential.hpp"

namespace trellis::models {

struct ModelOptions {
    int num_classes = 1000;
    bool zero_init_residual = false;  // ResNets: gamma = 0 in each branch's last norm (Goyal et al.)
};

// What a model's layers are built with.
struct BuildContext {
    nn::Backend& backend;
    const ModelOptions& options;
    const nn::DropoutDraw& dropout;  // the model's, set before each training forward pass
};

struct Architecture {
    std::string name;
    std::string form;  // printed after the name where a name has several forms ("ResNet v1.5"), else ""
    int default_image_size = 224;
    int minimum_image_size = 32;  // the smallest input every layer fits
    std::function<std::unique_ptr<nn::Sequential>(const BuildContext&)> build;
};

// The known models, in the order --help lists them.
const std::vector<Architecture>& architectures();
// Throws UsageError naming the accepted models.
const Architecture& find_architecture(const std::string& name);
// "resnet18, resnet34, ...": for --help and messages.
std::string architecture_names();

}  // namespace trellis::models
