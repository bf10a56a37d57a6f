// ResNets of He et al. 2016 for ImageNet: v1.5 (resnet50, 101, 152: the bottleneck's stride on
// its 3x3 convolution, as torchvision and MLPerf build them) and v1 (resnet50_v1, 101_v1,
// 152_v1: the stride on the first 1x1 convolution, as tf_cnn_benchmarks builds them, 3.86
// GMACs at 224 against v1.5's 4.09, so published images/sec compare only with v1); and the
// CIFAR-style ResNets of the same paper (6n+2 layers, 16/32/64 channels) for 32x32 inputs.
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
    bool stride_on_first = false;     // bottleneck v1: the stride on the first 1x1 convolution
    // "v1.5", "v1" or "" (the basic-block ResNets have one form), for the header line.
    std::string version() const { return bottleneck ? (stride_on_first ? "v1" : "v1.5") : ""; }
};

// The known models, in the order --help lists them.
const std::vector<ResNetConfig>& resnet_configs();
// Throws UsageError naming the accepted models.
const ResNetConfig& find_resnet(const std::string& name);

struct ResNetOptions {
    int num_classes = 1000;
    bool zero_init_residual = false;  // gamma = 0 in each branch's last norm (Goyal et al.)
};

// Multiply-accumulates of one forward pass of one image (convolutions and the linear layer).
double multiply_accumulates(const ResNetConfig& config, int image_size, int num_classes);

std::unique_ptr<nn::Sequential> build_resnet(nn::Backend& backend, const ResNetConfig& config,
                                             const ResNetOptions& options);

}  // namespace trellis::models
