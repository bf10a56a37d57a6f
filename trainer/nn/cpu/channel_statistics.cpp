#include "trainer/nn/cpu/channel_statistics.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trellis::nn::cpu {

void channel_statistics(const dnnl::memory::desc& desc, const float* data, ChannelStatistics& out) {
    const auto& md = desc.data;
    const auto& blocking = md.format_desc.blocking;
    if (md.ndims != 4 || md.data_type != dnnl_f32 || md.format_kind != dnnl_blocked || blocking.inner_nblks > 1 ||
        (blocking.inner_nblks == 1 && (blocking.inner_idxs[0] != 1 || blocking.inner_blks[0] > 16)))
        throw std::invalid_argument("batch norm statistics: unsupported layout (" + std::to_string(md.ndims) +
                                    " dimensions, " + std::to_string(blocking.inner_nblks) + " inner blocks)");
    const std::int64_t n = md.dims[0], channels = md.dims[1], height = md.dims[2], width = md.dims[3];
    const std::int64_t block = blocking.inner_nblks ? blocking.inner_blks[0] : 1;
    const auto* s = blocking.strides;
    const float* base = data + md.offset0;
    const double count = double(n * height * width);
    out.mean.resize(std::size_t(channels));
    out.variance.resize(std::size_t(channels));
    const std::int64_t blocks = (channels + block - 1) / block;
    // One block of channels at a time: its lanes are adjacent in memory (blocked layouts), so
    // the inner loop over them vectorises; channel blocks are independent, hence the threads.
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
        const std::int64_t lanes = std::min(block, channels - b * block);
        double shift[16], sum[16] = {}, squares[16] = {};
        const float* first = base + b * s[1];
        for (std::int64_t l = 0; l < lanes; ++l) shift[l] = first[block == 1 ? 0 : l];
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t h = 0; h < height; ++h)
                for (std::int64_t w = 0; w < width; ++w) {
                    const float* x = base + i * s[0] + b * s[1] + h * s[2] + w * s[3];
                    for (std::int64_t l = 0; l < lanes; ++l) {
                        double d = double(x[l]) - shift[l];
                        sum[l] += d;
                        squares[l] += d * d;
                    }
                }
        for (std::int64_t l = 0; l < lanes; ++l) {
            double centred_mean = sum[l] / count;
            auto c = std::size_t(b * block + l);
            out.mean[c] = float(shift[l] + centred_mean);
            out.variance[c] = float(std::max(squares[l] / count - centred_mean * centred_mean, 0.0));
        }
    }
}

}  // namespace trellis::nn::cpu
