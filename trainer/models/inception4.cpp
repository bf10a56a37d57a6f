// SPDX-License-Identifier: Apache-2.0
// Inception v4 as tf_cnn_benchmarks builds it (inception_model.py, Szegedy et al. 2016):
// batch norm as in inception3, a stem of three concatenating modules, 4 A, 7 B and 3 C
// modules with two reductions, then the spatial mean and dropout keeping 0.8. 42.65M
// parameters at 1001 classes, 12.25 GMACs at 299x299.
#include "trainer/models/layer_column.hpp"
#include "trainer/models/tf_models.hpp"

namespace trellis::models {

namespace {

void stem(LayerColumn& net) {
    net.conv(32, 3, 3, 2, Pad::valid).conv(32, 3, 3, 1, Pad::valid).conv(64, 3, 3);
    net.concat({[](LayerColumn& c) { c.max_pool(3, 2); }, [](LayerColumn& c) { c.conv(96, 3, 3, 2, Pad::valid); }});
    net.concat({[](LayerColumn& c) { c.conv(64, 1, 1).conv(96, 3, 3, 1, Pad::valid); },
                [](LayerColumn& c) { c.conv(64, 1, 1).conv(64, 7, 1).conv(64, 1, 7).conv(96, 3, 3, 1, Pad::valid); }});
    net.concat({[](LayerColumn& c) { c.conv(192, 3, 3, 2, Pad::valid); }, [](LayerColumn& c) { c.max_pool(3, 2); }});
}

void module_a(LayerColumn& net) {
    net.concat({[](LayerColumn& c) { c.average_pool(3, 1, Pad::same).conv(96, 1, 1); },
                [](LayerColumn& c) { c.conv(96, 1, 1); }, [](LayerColumn& c) { c.conv(64, 1, 1).conv(96, 3, 3); },
                [](LayerColumn& c) { c.conv(64, 1, 1).conv(96, 3, 3).conv(96, 3, 3); }});
}

void reduction_a(LayerColumn& net, int k, int l, int m, int n) {
    net.concat({[](LayerColumn& c) { c.max_pool(3, 2); }, [=](LayerColumn& c) { c.conv(n, 3, 3, 2, Pad::valid); },
                [=](LayerColumn& c) { c.conv(k, 1, 1).conv(l, 3, 3).conv(m, 3, 3, 2, Pad::valid); }});
}

void module_b(LayerColumn& net) {
    net.concat(
        {[](LayerColumn& c) { c.average_pool(3, 1, Pad::same).conv(128, 1, 1); },
         [](LayerColumn& c) { c.conv(384, 1, 1); },
         [](LayerColumn& c) { c.conv(192, 1, 1).conv(224, 1, 7).conv(256, 7, 1); },
         [](LayerColumn& c) { c.conv(192, 1, 1).conv(192, 1, 7).conv(224, 7, 1).conv(224, 1, 7).conv(256, 7, 1); }});
}

void reduction_b(LayerColumn& net) {
    net.concat(
        {[](LayerColumn& c) { c.max_pool(3, 2); },
         [](LayerColumn& c) { c.conv(192, 1, 1).conv(192, 3, 3, 2, Pad::valid); },
         [](LayerColumn& c) { c.conv(256, 1, 1).conv(256, 1, 7).conv(320, 7, 1).conv(320, 3, 3, 2, Pad::valid); }});
}

// The benchmark's 'share' columns: the 1x3 and 3x1 convolutions fork off the layer before.
void module_c(LayerColumn& net) {
    net.concat({[](LayerColumn& c) { c.average_pool(3, 1, Pad::same).conv(256, 1, 1); },
                [](LayerColumn& c) { c.conv(256, 1, 1); },
                [](LayerColumn& c) {
                    c.conv(384, 1, 1).concat(
                        {[](LayerColumn& b) { b.conv(256, 1, 3); }, [](LayerColumn& b) { b.conv(256, 3, 1); }});
                },
                [](LayerColumn& c) {
                    c.conv(384, 1, 1).conv(448, 1, 3).conv(512, 3, 1);
                    c.concat({[](LayerColumn& b) { b.conv(256, 3, 1); }, [](LayerColumn& b) { b.conv(256, 1, 3); }});
                }});
}

}  // namespace

Architecture inception4() {
    // Eight VALID 3x3 layers, five of them with stride 2, before the spatial mean: 75 pixels.
    return {"inception4", "", 299, 75, [](const BuildContext& build) {
                LayerColumn net(build, {.batch_norm = true}, 3);
                stem(net);
                for (int i = 0; i < 4; ++i) module_a(net);
                reduction_a(net, 192, 224, 256, 384);
                for (int i = 0; i < 7; ++i) module_b(net);
                reduction_b(net);
                for (int i = 0; i < 3; ++i) module_c(net);
                net.spatial_mean().dropout(0.8f);
                net.affine(build.options.num_classes, false);
                return net.take();
            }};
}

}  // namespace trellis::models
