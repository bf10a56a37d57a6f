// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/evaluation.hpp"

#include "trainer/data/batch_plan.hpp"
#include "trainer/train/model_batch.hpp"
#include "trainer/train/stop_request.hpp"

namespace trellis::train {

std::optional<Evaluation> evaluate(const EvaluationPass& pass) {
    auto sum = [&](std::span<float> values) {
        if (pass.sums) pass.sums->sum(values);
    };
    // Shards may differ by one batch (or a rank may have none): every rank takes as many turns
    // as rank 0, which has the most, so that each turn's vote meets the same vote everywhere.
    auto set_size = pass.sources.eval_set->size();
    auto batches = data::evaluation_batches(set_size, pass.batch_size, 0, pass.ranks);
    auto mine = data::evaluation_batches(set_size, pass.batch_size, pass.rank, pass.ranks);
    auto source = mine > 0 ? pass.sources.open_eval(pass.rank, pass.ranks, pass.decoding) : nullptr;
    PackedBatch packed(pass.model.batch(), std::size_t(pass.image_size) * pass.image_size * 3);
    Evaluation result;
    for (std::int64_t b = 0; b < batches; ++b) {
        // A preempted job must reach its checkpoint: an evaluation pass yields to a signal.
        // Ranks that share the pass decide together, batch by batch, so that none leaves the
        // others waiting in the final sum.
        float stop = stop_requested() ? 1.0f : 0.0f;
        sum({&stop, 1});
        if (stop > 0) return std::nullopt;
        if (b >= mine) continue;
        const auto& batch = source->next();
        // Score only real samples: copies standing in for unreadable ones are left out, and
        // a short last batch is padded.
        int count = packed.pack(batch);
        if (count == 0) continue;
        auto scored = pass.model.evaluate(packed.images(), packed.labels(), count, pass.loss);
        result.loss += scored.loss * count;
        result.top1 += scored.top1_hits;
        result.top5 += scored.top5_hits;
        result.examples += count;
    }
    // Each rank scored its own shard of the evaluation set.
    float totals[] = {float(result.loss), float(result.top1), float(result.top5), float(result.examples)};
    sum(totals);
    result = {totals[0], totals[1], totals[2], std::int64_t(totals[3])};
    if (result.examples > 0) {
        result.loss /= double(result.examples);
        result.top1 /= double(result.examples);
        result.top5 /= double(result.examples);
    }
    return result;
}

}  // namespace trellis::train
