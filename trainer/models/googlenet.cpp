// SPDX-License-Identifier: Apache-2.0
// GoogLeNet as tf_cnn_benchmarks builds it (googlenet_model.py, Szegedy et al. 2014): the
// stem, nine Inception v1 modules and a 7x7 average pooling, every convolution with a bias
// and a ReLU. No local response normalisation, dropout or auxiliary heads. 7.00M parameters
// at 1001 classes, 1.58 GMACs at 224x224.
#include "trainer/models/layer_column.hpp"
#include "trainer/models/tf_models.hpp"

namespace trellis::models {

namespace {

// 1x1 | 1x1 -> 3x3 | 1x1 -> 5x5 | 3x3 max pooling -> 1x1, side by side.
void inception_v1(LayerColumn& net, int k, int l, int m, int n, int p, int q) {
    net.concat({[=](LayerColumn& c) { c.conv(k, 1, 1); }, [=](LayerColumn& c) { c.conv(l, 1, 1).conv(m, 3, 3); },
                [=](LayerColumn& c) { c.conv(n, 1, 1).conv(p, 5, 5); },
                [=](LayerColumn& c) { c.max_pool(3, 1, Pad::same).conv(q, 1, 1); }});
}

}  // namespace

Architecture googlenet() {
    // Five halvings (SAME: ceil) must leave the final 7x7 average pooling 7x7: 193 pixels.
    return {"googlenet", "", 224, 193, [](const BuildContext& build) {
                LayerColumn net(build, {}, 3);
                net.conv(64, 7, 7, 2).max_pool(3, 2, Pad::same);
                net.conv(64, 1, 1).conv(192, 3, 3).max_pool(3, 2, Pad::same);
                inception_v1(net, 64, 96, 128, 16, 32, 32);
                inception_v1(net, 128, 128, 192, 32, 96, 64);
                net.max_pool(3, 2, Pad::same);
                inception_v1(net, 192, 96, 208, 16, 48, 64);
                inception_v1(net, 160, 112, 224, 24, 64, 64);
                inception_v1(net, 128, 128, 256, 24, 64, 64);
                inception_v1(net, 112, 144, 288, 32, 64, 64);
                inception_v1(net, 256, 160, 320, 32, 128, 128);
                net.max_pool(3, 2, Pad::same);
                inception_v1(net, 256, 160, 320, 32, 128, 128);
                inception_v1(net, 384, 192, 384, 48, 128, 128);
                net.average_pool(7, 1);
                net.affine(build.options.num_classes, false);
                return net.take();
            }};
}

}  // namespace trellis::models
