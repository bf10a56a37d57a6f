// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/layer_profile.hpp"

#include <algorithm>
#include <cstdio>

#include "trainer/cuda/check.hpp"

namespace trellis::cuda {

LayerProfile::Span::Span(LayerProfile* profile, const char* kind, cudaStream_t stream)
    : profile_(profile), kind_(kind), stream_(stream) {
    if (!profile_) return;
    start_ = profile_->event();
    check(cudaEventRecord(start_, stream_), "profiling");
}

LayerProfile::Span::~Span() {
    if (!profile_) return;
    cudaEvent_t end = profile_->event();
    cudaEventRecord(end, stream_);
    profile_->pending_.push_back({kind_, start_, end, profile_->steps_ >= skip});
}

LayerProfile::~LayerProfile() {
    for (auto& p : pending_) free_.insert(free_.end(), {p.start, p.end});
    for (auto e : free_) cudaEventDestroy(e);
}

cudaEvent_t LayerProfile::event() {
    if (free_.empty()) {
        cudaEvent_t e = nullptr;
        check(cudaEventCreate(&e), "profiling");
        return e;
    }
    auto e = free_.back();
    free_.pop_back();
    return e;
}

void LayerProfile::add_completed(bool wait) {
    std::size_t kept = 0;
    for (auto& p : pending_) {
        if (!wait && cudaEventQuery(p.end) != cudaSuccess) {
            pending_[kept++] = p;
            continue;
        }
        float ms = 0;
        if (cudaEventSynchronize(p.end) == cudaSuccess && cudaEventElapsedTime(&ms, p.start, p.end) == cudaSuccess &&
            p.counted)
            milliseconds_[p.kind] += ms;
        free_.insert(free_.end(), {p.start, p.end});
    }
    pending_.resize(kept);
    cudaGetLastError();
}

void LayerProfile::step_done() {
    if (!enabled_) return;
    if (++steps_ == skip) counted_since_ = std::chrono::steady_clock::now();
    add_completed(false);
}

std::string LayerProfile::report() {
    if (!enabled_ || steps_ <= skip) return {};
    add_completed(true);
    double steps = double(steps_ - skip);
    double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - counted_since_).count();
    std::vector<std::pair<double, std::string>> rows;
    double gpu = 0;
    for (const auto& [kind, ms] : milliseconds_) {
        rows.emplace_back(ms / steps, kind);
        gpu += ms / steps;
    }
    std::sort(rows.rbegin(), rows.rend());
    char line[160];
    std::snprintf(line, sizeof line,
                  "GPU time by kind of work, ms per step over %.0f steps (the first %lld left out):\n", steps,
                  static_cast<long long>(skip));
    std::string text = line;
    for (const auto& [ms, kind] : rows) {
        std::snprintf(line, sizeof line, "  %-28s %9.2f  %5.1f%%\n", kind.c_str(), ms, gpu > 0 ? 100 * ms / gpu : 0.0);
        text += line;
    }
    std::snprintf(line, sizeof line,
                  "  %-28s %9.2f\n  %-28s %9.2f  (the GPU idles, or works outside these spans, for the rest)\n",
                  "all profiled work", gpu, "wall time per step", wall / steps);
    return text + line;
}

}  // namespace trellis::cuda
