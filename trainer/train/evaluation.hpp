// SPDX-License-Identifier: Apache-2.0
// One pass over a rank's shard of the evaluation set: loss and top-1/top-5 accuracy, summed
// over the ranks that share the pass. A pass yields to a stop request (a preempted job must
// reach its checkpoint in Slurm's grace time).
#pragma once

#include <cstdint>
#include <optional>

#include "trainer/comm/allreduce.hpp"
#include "trainer/models/model.hpp"
#include "trainer/nn/softmax_cross_entropy.hpp"
#include "trainer/train/data_sources.hpp"

namespace trellis::train {

struct Evaluation {
    double loss = 0, top1 = 0, top5 = 0;
    std::int64_t examples = 0;
};

struct EvaluationPass {
    const DataSources& sources;  // with an evaluation set
    models::Model& model;
    nn::SoftmaxCrossEntropy& loss;
    Decoding decoding;
    int batch_size = 0, image_size = 0;
    int rank = 0, ranks = 1;          // this rank's shard of `ranks`
    comm::Allreduce* sums = nullptr;  // the ranks that share the pass; null: this rank alone
};

// The averages over the whole set, the same on every rank of the pass; empty when a stop was
// requested on any of them before the end.
std::optional<Evaluation> evaluate(const EvaluationPass& pass);

}  // namespace trellis::train
