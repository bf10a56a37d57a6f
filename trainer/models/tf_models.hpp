// SPDX-License-Identifier: Apache-2.0
// tf_cnn_benchmarks' models beside the ResNets, from the layer lists of its models/*.py
// (the benchmark the Horovod, IBM DDL and RDMA-TensorFlow results were measured with): the
// same layers, kernels, strides, padding modes and batch-norm settings, and the classifier
// the benchmark adds (a linear layer to the classes). What differs is said where the model
// is written.
#pragma once

#include "trainer/models/architecture.hpp"

namespace trellis::models {

Architecture alexnet();     // 227x227 (224 + 3 for the VALID 11x11/4), no LRN, dropout 0.5
Architecture vgg16();       // 224x224, 13 convolutions with biases, dropout 0.5
Architecture googlenet();   // 224x224, Inception v1 modules, no LRN, no auxiliary heads
Architecture inception3();  // 299x299, batch norm without a scale, 1x7/7x1 and 1x3/3x1 kernels
Architecture inception4();  // 299x299, as inception3, spatial mean and dropout 0.8

}  // namespace trellis::models
