// SPDX-License-Identifier: Apache-2.0
// AlexNet as tf_cnn_benchmarks builds it (alexnet_model.py): five convolutions with biases,
// three max poolings, two 4096-wide fully connected layers with dropout. No local response
// normalisation (only the benchmark's CIFAR AlexNet has it). 61.84M parameters at 1001
// classes, 0.84 GMACs at 227x227.
#include "trainer/models/layer_column.hpp"
#include "trainer/models/tf_models.hpp"

namespace trellis::models {

Architecture alexnet() {
    // The smallest input: the last max pooling needs 3x3, so 7x7 after the first pooling and
    // 15x15 after the first convolution: 11 + 14 x 4 = 67 pixels.
    return {"alexnet", "", 227, 67, [](const BuildContext& build) {
                LayerColumn net(build, {}, 3);
                net.conv(64, 11, 11, 4, Pad::valid).max_pool(3, 2);
                net.conv(192, 5, 5).max_pool(3, 2);
                net.conv(384, 3, 3).conv(384, 3, 3).conv(256, 3, 3).max_pool(3, 2);
                net.affine(4096).dropout(0.5f).affine(4096).dropout(0.5f);
                net.affine(build.options.num_classes, false);
                return net.take();
            }};
}

}  // namespace trellis::models
