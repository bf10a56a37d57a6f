// SPDX-License-Identifier: Apache-2.0
// ResNets of He et al. 2016 for ImageNet: v1.5 (resnet50, 101, 152: the bottleneck's stride on
// its 3x3 convolution, as torchvision and MLPerf build them) and v1 (resnet50_v1, 101_v1,
// 152_v1: the stride on the first 1x1 convolution, as tf_cnn_benchmarks builds them, 3.86
// GMACs at 224 against v1.5's 4.09, so published images/sec compare only with v1); and the
// CIFAR-style ResNets of the same paper (6n+2 layers, 16/32/64 channels) for 32x32 inputs.
#pragma once

#include <vector>

#include "trainer/models/architecture.hpp"

namespace trellis::models {

// The ResNets, in the order --help lists them; their `form` is "ResNet v1.5" or "ResNet v1"
// for the bottleneck ones.
std::vector<Architecture> resnets();

}  // namespace trellis::models
