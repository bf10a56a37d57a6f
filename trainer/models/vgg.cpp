// SPDX-License-Identifier: Apache-2.0
// VGG16 as tf_cnn_benchmarks builds it (vgg_model.py, configuration D of Simonyan and
// Zisserman): thirteen 3x3 convolutions with biases in five groups, each closed by a 2x2 max
// pooling, then two 4096-wide fully connected layers with dropout. 138.36M parameters at
// 1001 classes (553 MB of gradients a step), 15.47 GMACs at 224x224.
#include "trainer/models/layer_column.hpp"
#include "trainer/models/tf_models.hpp"

namespace trellis::models {

Architecture vgg16() {
    // Five 2x2 poolings: 32 pixels at least.
    return {"vgg16", "", 224, 32, [](const BuildContext& build) {
                LayerColumn net(build, {}, 3);
                const int groups[][2] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
                for (const auto& [channels, convolutions] : groups) {
                    for (int i = 0; i < convolutions; ++i) net.conv(channels, 3, 3);
                    net.max_pool(2, 2);
                }
                net.affine(4096).dropout(0.5f).affine(4096).dropout(0.5f);
                net.affine(build.options.num_classes, false);
                return net.take();
            }};
}

}  // namespace trellis::models
