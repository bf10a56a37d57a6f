// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/channel_statistics.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "trainer/nn/cpu/dnnl_version.hpp"

namespace trellis::nn::cpu {

namespace {

// Sums of one block of `Lanes` channels (adjacent in memory when Lanes > 1) over N, H and W,
// shifted by each lane's first value. A constant lane count lets the compiler vectorise the
// lanes; the plain and channels-last layouts take Lanes = 1.
template <int Lanes>
void block_sums(const float* block, const std::int64_t* strides, std::int64_t n, std::int64_t height,
                std::int64_t width, double* shift, double* sum, double* squares) {
    for (int l = 0; l < Lanes; ++l) shift[l] = block[l], sum[l] = 0, squares[l] = 0;
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t h = 0; h < height; ++h)
            for (std::int64_t w = 0; w < width; ++w) {
                const float* x = block + i * strides[0] + h * strides[2] + w * strides[3];
#pragma omp simd
                for (int l = 0; l < Lanes; ++l) {
                    double d = double(x[l]) - shift[l];
                    sum[l] += d;
                    squares[l] += d * d;
                }
            }
}

}  // namespace

void channel_statistics(const dnnl::memory::desc& desc, const float* data, ChannelStatistics& out) {
    auto md = layout_facts(desc);
    const auto ndims = md.dims.size(), inner_nblks = md.inner_blocks.size();
    if (ndims != 4 || md.data_type != memory::data_type::f32 || !md.blocked || inner_nblks > 1 ||
        (inner_nblks == 1 && (md.inner_indices[0] != 1 || md.inner_blocks[0] > 16)))
        throw std::invalid_argument("batch norm statistics: unsupported layout (" + std::to_string(ndims) +
                                    " dimensions, " + std::to_string(inner_nblks) + " inner blocks)");
    const std::int64_t n = md.dims[0], channels = md.dims[1], height = md.dims[2], width = md.dims[3];
    const std::int64_t block = inner_nblks ? md.inner_blocks[0] : 1;
    const std::int64_t* s = md.strides.data();
    const float* base = data + md.offset;
    const double count = double(n * height * width);
    out.mean.resize(std::size_t(channels));
    out.variance.resize(std::size_t(channels));
    if (block != 16 && block != 8 && block != 4 && block != 1)  // (not from inside the threads)
        throw std::invalid_argument("batch norm statistics: channel blocks of " + std::to_string(block));
    const std::int64_t blocks = (channels + block - 1) / block;
    // Channel blocks are independent, hence the threads. A block's padding lanes (channels
    // past the last) are summed too, and dropped.
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
        double shift[16], sum[16], squares[16];
        const float* first = base + b * s[1];
        switch (block) {
        case 16: block_sums<16>(first, s, n, height, width, shift, sum, squares); break;
        case 8: block_sums<8>(first, s, n, height, width, shift, sum, squares); break;
        case 4: block_sums<4>(first, s, n, height, width, shift, sum, squares); break;
        case 1: block_sums<1>(first, s, n, height, width, shift, sum, squares); break;
        default: break;  // refused above
        }
        const std::int64_t lanes = std::min(block, channels - b * block);
        for (std::int64_t l = 0; l < lanes; ++l) {
            double centred_mean = sum[l] / count;
            auto c = std::size_t(b * block + l);
            out.mean[c] = float(shift[l] + centred_mean);
            out.variance[c] = float(std::max(squares[l] / count - centred_mean * centred_mean, 0.0));
        }
    }
}

}  // namespace trellis::nn::cpu
