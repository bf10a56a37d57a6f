// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/pixel_output.hpp"

namespace trellis::data {

Normalisation Normalisation::of(const ChannelStatistics& statistics) {
    Normalisation n;
    for (int c = 0; c < 3; ++c) {
        n.gain[c] = 1.0f / (255.0f * statistics.std[c]);
        n.bias[c] = -statistics.mean[c] / statistics.std[c];
    }
    return n;
}

}  // namespace trellis::data
