// ResNet v1.5 (He et al. 2016, with the stride on the 3x3 convolution of the bottleneck, as
// torchvision and MLPerf use it) for ImageNet, and the CIFAR-style ResNets of the same paper
// (6n+2 layers, 16/32/64 channels) for 32x32 inputs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "trainer/nn/backend.hpp"
#include "trainer/nn/sequential.hpp"

namespace trellis::models {

struct ResNetConfig {
    std::string name;
    bool bottleneck = false;
    bool cifar = false;               // 3x3 stem without pooling, three stages
    std::vector<int> blocks;          // per stage
    int default_image_size = 224;
};

// The known models, in the order --help lists them.
const std::vector<ResNetConfig>& resnet_configs();
// Throws UsageError naming the accepted models.
const ResNetConfig& find_resnet(const std::string& name);

struct ResNetOptions {
    int num_classes = 1000;
    bool zero_init_residual = false;  // gamma = 0 in each branch's last norm (Goyal et al.)
};

std::unique_ptr<nn::Sequential> build_resnet(nn::Backend& backend, const ResNetConfig& config,
                                             const ResNetOptions& options);

}  // namespace trellis::models
