// SPDX-License-Identifier: Apache-2.0
#include "tests/catch.hpp"

#include "trainer/data/synthetic.hpp"

using namespace trellis::data;

TEST_CASE("synthetic data is one fixed random batch served at every step") {
    SyntheticConfig config;
    config.batch_size = 4;
    config.image_size = 16;
    config.num_classes = 10;
    config.seed = 3;
    config.epoch_size = 40;
    SyntheticBatches source(config);
    CHECK(source.steps_per_epoch() == 10);
    const Batch& first = source.next();
    std::vector<float> images = first.images;
    std::vector<int> labels = first.labels;
    CHECK(images.size() == 4 * 16 * 16 * 3);
    CHECK(first.size == 4);
    for (int label : labels) CHECK((label >= 0 && label < 10));
    // Normalised pixels of 127 +- 2 * 60 grey levels.
    for (float value : images) CHECK((value > -2.2f && value < 2.7f));

    for (int i = 1; i < 12; ++i) source.next();
    const Batch& later = source.next();
    CHECK(later.images == images);
    CHECK(later.labels == labels);
    CHECK(later.epoch == 1);
    CHECK(later.index_in_epoch == 2);
    CHECK(source.position() == Position{1, 3});

    SyntheticBatches same(config);
    CHECK(same.next().images == images);
    config.seed = 4;
    SyntheticBatches other(config);
    CHECK(other.next().images != images);
}
