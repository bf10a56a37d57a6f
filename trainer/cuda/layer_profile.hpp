// SPDX-License-Identifier: Apache-2.0
// Where a GPU step's time goes, by kind of work (convolution forward, batch norm backward,
// the optimizer, ...): CUDA events around each, added up once they completed, and the host's
// wall time per step beside the GPU's. On when TRELLIS_CUDA_PROFILE is set: the events cost
// host time, so a profiled run is not a timed one. The profile that says why a speed target
// was missed (scripts/gpu-check's profile section).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trellis::cuda {

class LayerProfile {
public:
    explicit LayerProfile(bool enabled) : enabled_(enabled) {}
    LayerProfile(const LayerProfile&) = delete;
    ~LayerProfile();

    // Times the work queued on `stream` while it lives.
    class Span {
    public:
        Span(LayerProfile* profile, const char* kind, cudaStream_t stream);
        Span(const Span&) = delete;
        ~Span();

    private:
        LayerProfile* profile_;
        const char* kind_;
        cudaStream_t stream_;
        cudaEvent_t start_ = nullptr;
    };
    Span time(const char* kind, cudaStream_t stream) { return Span(enabled_ ? this : nullptr, kind, stream); }

    // At the end of each step: the steps before `skip` (cuDNN's benchmarks) are left out.
    void step_done();
    // Waits for the spans still running; "" when off or nothing was profiled.
    std::string report();

private:
    struct Pending {
        const char* kind;
        cudaEvent_t start, end;
        bool counted;  // after the skipped steps
    };
    cudaEvent_t event();
    void add_completed(bool wait);

    static constexpr std::int64_t skip = 3;
    bool enabled_;
    std::vector<Pending> pending_;
    std::vector<cudaEvent_t> free_;
    std::map<std::string, double> milliseconds_;
    std::int64_t steps_ = 0;
    std::chrono::steady_clock::time_point counted_since_;
};

}  // namespace trellis::cuda
