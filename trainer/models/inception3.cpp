// SPDX-License-Identifier: Apache-2.0
// Inception v3 as tf_cnn_benchmarks builds it (inception_model.py, Szegedy et al. 2015):
// batch norm after every convolution with the benchmark's defaults (no learnt scale, epsilon
// 1e-3, decay 0.999), factorised 1x7/7x1 and 1x3/3x1 kernels, average poolings that exclude
// the padding, and modules whose 1x3 and 3x1 branches fork off a shared layer (its 'share'
// columns, written here as a concatenation inside the branch). No auxiliary head (off in the
// benchmark by default). 23.82M parameters at 1001 classes, 5.71 GMACs at 299x299.
#include "trainer/models/layer_column.hpp"
#include "trainer/models/tf_models.hpp"

namespace trellis::models {

namespace {

using Branch = std::function<void(LayerColumn&)>;

void module_a(LayerColumn& net, int pool_projection) {
    net.concat({[](LayerColumn& c) { c.conv(64, 1, 1); }, [](LayerColumn& c) { c.conv(48, 1, 1).conv(64, 5, 5); },
                [](LayerColumn& c) { c.conv(64, 1, 1).conv(96, 3, 3).conv(96, 3, 3); },
                [=](LayerColumn& c) { c.average_pool(3, 1, Pad::same).conv(pool_projection, 1, 1); }});
}

void module_b(LayerColumn& net) {  // 35x35 -> 17x17
    net.concat({[](LayerColumn& c) { c.conv(384, 3, 3, 2, Pad::valid); },
                [](LayerColumn& c) { c.conv(64, 1, 1).conv(96, 3, 3).conv(96, 3, 3, 2, Pad::valid); },
                [](LayerColumn& c) { c.max_pool(3, 2); }});
}

void module_c(LayerColumn& net, int n) {
    net.concat({[](LayerColumn& c) { c.conv(192, 1, 1); },
                [=](LayerColumn& c) { c.conv(n, 1, 1).conv(n, 1, 7).conv(192, 7, 1); },
                [=](LayerColumn& c) { c.conv(n, 1, 1).conv(n, 7, 1).conv(n, 1, 7).conv(n, 7, 1).conv(192, 1, 7); },
                [](LayerColumn& c) { c.average_pool(3, 1, Pad::same).conv(192, 1, 1); }});
}

void module_d(LayerColumn& net) {  // 17x17 -> 8x8
    net.concat(
        {[](LayerColumn& c) { c.conv(192, 1, 1).conv(320, 3, 3, 2, Pad::valid); },
         [](LayerColumn& c) { c.conv(192, 1, 1).conv(192, 1, 7).conv(192, 7, 1).conv(192, 3, 3, 2, Pad::valid); },
         [](LayerColumn& c) { c.max_pool(3, 2); }});
}

// A 1x3 and a 3x1 convolution side by side over what came before them.
const Branch fork_1x3_3x1 = [](LayerColumn& c) {
    c.concat({[](LayerColumn& b) { b.conv(384, 1, 3); }, [](LayerColumn& b) { b.conv(384, 3, 1); }});
};

void module_e(LayerColumn& net, bool max_pooling) {
    net.concat({[](LayerColumn& c) { c.conv(320, 1, 1); }, [](LayerColumn& c) { fork_1x3_3x1(c.conv(384, 1, 1)); },
                [](LayerColumn& c) { fork_1x3_3x1(c.conv(448, 1, 1).conv(384, 3, 3)); },
                [=](LayerColumn& c) {
                    if (max_pooling)
                        c.max_pool(3, 1, Pad::same);
                    else
                        c.average_pool(3, 1, Pad::same);
                    c.conv(192, 1, 1);
                }});
}

}  // namespace

Architecture inception3() {
    // The final 8x8 average pooling needs the 8x8 map that 299 pixels give (298 give 7x7).
    return {"inception3", "", 299, 299, [](const BuildContext& build) {
                LayerColumn net(build, {.batch_norm = true}, 3);
                net.conv(32, 3, 3, 2, Pad::valid).conv(32, 3, 3, 1, Pad::valid).conv(64, 3, 3).max_pool(3, 2);
                net.conv(80, 1, 1, 1, Pad::valid).conv(192, 3, 3, 1, Pad::valid).max_pool(3, 2);
                module_a(net, 32);
                module_a(net, 64);
                module_a(net, 64);
                module_b(net);
                for (int n : {128, 160, 160, 192}) module_c(net, n);
                module_d(net);
                module_e(net, false);
                module_e(net, true);
                net.average_pool(8, 1);
                net.affine(build.options.num_classes, false);
                return net.take();
            }};
}

}  // namespace trellis::models
