// SPDX-License-Identifier: Apache-2.0
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "trainer/cuda/kernels.hpp"
#include "trainer/nn/dropout_mask.hpp"

namespace trellis::cuda::kernels {

namespace {

constexpr int threads = 256;

// A launch that failed (bad configuration, no kernel image for this GPU) is reported at once,
// not by whatever CUDA call comes next, as every CUDA error is (CudaError, check.cpp).
void launched(const char* kernel) {
    cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) launch_failed(kernel, status);
}

unsigned blocks_for(std::size_t n) {
    std::size_t wanted = (n + threads - 1) / threads;
    return unsigned(wanted < 65535 * 8 ? (wanted == 0 ? 1 : wanted) : 65535 * 8);
}

__device__ inline float load(const void* p, std::size_t i, DType type) {
    switch (type) {
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::f16: return __half2float(static_cast<const __half*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
    }
}

__device__ inline void store(void* p, std::size_t i, DType type, float value) {
    switch (type) {
    case DType::bf16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(value); break;
    case DType::f16: static_cast<__half*>(p)[i] = __float2half(value); break;
    default: static_cast<float*>(p)[i] = value;
    }
}

// Grid-stride loops: any n with a bounded grid.
#define FOR_EACH(i, n)                                                                \
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); \
         i += std::size_t(gridDim.x) * blockDim.x)

__global__ void convert_kernel(const void* src, DType from, void* dst, DType to, std::size_t n, float scale) {
    FOR_EACH(i, n) store(dst, i, to, load(src, i, from) * scale);
}

// Passed by value: the three channels' affine maps travel with the launch.
struct ChannelAffine {
    float gain[3], bias[3];
};

__global__ void normalise_pixels_kernel(const std::uint8_t* src, void* dst, DType to, std::size_t n,
                                        ChannelAffine affine) {
    FOR_EACH(i, n) {
        int c = int(i % 3);
        store(dst, i, to, float(src[i]) * affine.gain[c] + affine.bias[c]);
    }
}

__global__ void add_relu_kernel(const void* a, const void* b, void* y, DType type, std::size_t n) {
    FOR_EACH(i, n) store(y, i, type, fmaxf(load(a, i, type) + load(b, i, type), 0.0f));
}

__global__ void relu_backward_kernel(const void* y, const void* dy, void* dx, DType type, std::size_t n) {
    FOR_EACH(i, n) store(dx, i, type, load(y, i, type) > 0.0f ? load(dy, i, type) : 0.0f);
}

__global__ void relu_kernel(const void* x, void* y, DType type, std::size_t n) {
    FOR_EACH(i, n) store(y, i, type, fmaxf(load(x, i, type), 0.0f));
}

__global__ void dropout_kernel(const float* x, float* y, std::size_t n, std::uint64_t key, std::uint64_t threshold,
                               float scale) {
    FOR_EACH(i, n) y[i] = nn::keeps(key, i, threshold) ? x[i] * scale : 0.0f;
}

// One thread per element of the larger tensor (padding) or of the smaller (cropping).
__global__ void pad_end_kernel(const void* x, void* y, DType type, int n, int h, int w, int c, int extra_h, int extra_w,
                               float fill) {
    int hp = h + extra_h, wp = w + extra_w;
    FOR_EACH(i, std::size_t(n) * hp * wp * c) {
        std::size_t channel = i % c, col = i / c % wp, row = i / c / wp % hp, image = i / c / wp / hp;
        bool inside = row < std::size_t(h) && col < std::size_t(w);
        store(y, i, type, inside ? load(x, ((image * h + row) * w + col) * c + channel, type) : fill);
    }
}

__global__ void crop_end_kernel(const void* dy, void* dx, DType type, int n, int h, int w, int c, int extra_h,
                                int extra_w) {
    int hp = h + extra_h, wp = w + extra_w;
    FOR_EACH(i, std::size_t(n) * h * w * c) {
        std::size_t channel = i % c, col = i / c % w, row = i / c / w % h, image = i / c / w / h;
        store(dx, i, type, load(dy, ((image * hp + row) * wp + col) * c + channel, type));
    }
}

__global__ void accumulate_kernel(void* target, const void* addend, DType type, std::size_t n) {
    FOR_EACH(i, n) store(target, i, type, load(target, i, type) + load(addend, i, type));
}

// One thread per (image, channel): consecutive threads read consecutive channels.
__global__ void gap_kernel(const void* x, DType type, float* y, int n, int hw, int c) {
    FOR_EACH(i, std::size_t(n) * c) {
        std::size_t image = i / c, channel = i % c;
        float sum = 0;
        for (int p = 0; p < hw; ++p) sum += load(x, (image * hw + p) * c + channel, type);
        y[i] = sum / float(hw);
    }
}

__global__ void gap_backward_kernel(const float* dy, void* dx, DType type, int n, int hw, int c) {
    FOR_EACH(i, std::size_t(n) * hw * c) {
        std::size_t channel = i % c, image = i / (std::size_t(hw) * c);
        store(dx, i, type, dy[image * c + channel] / float(hw));
    }
}

__global__ void add_bias_kernel(float* y, const float* bias, int rows, int cols) {
    FOR_EACH(i, std::size_t(rows) * cols) y[i] += bias[i % cols];
}

__global__ void bias_gradient_kernel(const float* dy, float* grad, int rows, int cols) {
    FOR_EACH(j, std::size_t(cols)) {
        float sum = 0;
        for (int r = 0; r < rows; ++r) sum += dy[std::size_t(r) * cols + j];
        grad[j] = sum;
    }
}

// y[r, c] += bias[c] over rows of `channels` (NHWC), the f32 bias added in f32.
__global__ void add_channel_bias_kernel(void* y, DType type, const float* bias, std::size_t rows, int channels) {
    FOR_EACH(i, rows * channels) store(y, i, type, load(y, i, type) + bias[i % channels]);
}

// The bias gradient in two passes, so that its sums keep one order (no atomics): each block
// sums its slice of rows per channel (consecutive threads, consecutive channels), then one
// thread per channel adds the blocks' sums.
__global__ void channel_sums_kernel(const void* dy, DType type, float* partial, std::size_t rows, int channels,
                                    std::size_t rows_per_block) {
    std::size_t first = blockIdx.x * rows_per_block, end = first + rows_per_block, last = end < rows ? end : rows;
    for (int c = threadIdx.x; c < channels; c += blockDim.x) {
        float sum = 0;
        for (std::size_t r = first; r < last; ++r) sum += load(dy, r * channels + c, type);
        partial[std::size_t(blockIdx.x) * channels + c] = sum;
    }
}

__global__ void sum_blocks_kernel(const float* partial, float* grad, int blocks, int channels) {
    FOR_EACH(c, std::size_t(channels)) {
        float sum = 0;
        for (int b = 0; b < blocks; ++b) sum += partial[std::size_t(b) * channels + c];
        grad[c] = sum;
    }
}

// The vector-kernels speed item (trainer/gpu/speedups.hpp): element-wise kernels compiled per
// type, one 16-byte load and store per 8 bf16/f16 or 4 f32 elements, where the scalar ones
// switch on the type at every element and move 2 bytes at a time.
bool vector_kernels = false;

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_float(__half v) { return __half2float(v); }
template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
    return v;
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ inline __half from_float<__half>(float v) {
    return __float2half(v);
}

struct AddRelu {
    __device__ float operator()(float a, float b) const { return fmaxf(a + b, 0.0f); }
};
struct Relu {
    __device__ float operator()(float x, float) const { return fmaxf(x, 0.0f); }
};
struct ReluBackward {  // a: the ReLU's output, b: its gradient
    __device__ float operator()(float y, float dy) const { return y > 0.0f ? dy : 0.0f; }
};
struct Add {
    __device__ float operator()(float a, float b) const { return a + b; }
};

// y = op(a, b) over `vectors` 16-byte vectors; b may be null (then 0).
template <typename T, typename Op>
__global__ void vector_kernel(const uint4* a, const uint4* b, uint4* y, std::size_t vectors, Op op) {
    constexpr int per_vector = sizeof(uint4) / sizeof(T);
    FOR_EACH(i, vectors) {
        uint4 va = a[i], vb = b ? b[i] : uint4{0, 0, 0, 0}, vy;
        const T* ea = reinterpret_cast<const T*>(&va);
        const T* eb = reinterpret_cast<const T*>(&vb);
        T* ey = reinterpret_cast<T*>(&vy);
#pragma unroll
        for (int k = 0; k < per_vector; ++k) ey[k] = from_float<T>(op(to_float(ea[k]), to_float(eb[k])));
        y[i] = vy;
    }
}

// Launches the vector kernel where the item is on and the pointers and count allow it;
// false where the scalar kernel must run.
template <typename Op>
bool launched_as_vectors(const void* a, const void* b, void* y, DType type, std::size_t n, Op op, cudaStream_t stream) {
    auto aligned = [](const void* p) { return !p || reinterpret_cast<std::uintptr_t>(p) % sizeof(uint4) == 0; };
    std::size_t per_vector = sizeof(uint4) / (type == DType::f32 ? 4 : 2);
    if (!vector_kernels || n % per_vector || !aligned(a) || !aligned(b) || !aligned(y)) return false;
    std::size_t vectors = n / per_vector;
    auto va = static_cast<const uint4*>(a), vb = static_cast<const uint4*>(b);
    auto vy = static_cast<uint4*>(y);
    switch (type) {
    case DType::bf16:
        vector_kernel<__nv_bfloat16><<<blocks_for(vectors), threads, 0, stream>>>(va, vb, vy, vectors, op);
        break;
    case DType::f16: vector_kernel<__half><<<blocks_for(vectors), threads, 0, stream>>>(va, vb, vy, vectors, op); break;
    default: vector_kernel<float><<<blocks_for(vectors), threads, 0, stream>>>(va, vb, vy, vectors, op);
    }
    launched("vector_kernel");
    return true;
}

// Block-wide sum of one value per thread (blockDim.x == threads).
template <typename T>
__device__ T block_sum(T value, T* shared) {
    shared[threadIdx.x] = value;
    __syncthreads();
    for (int half = threads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    T total = shared[0];
    __syncthreads();
    return total;
}

__global__ void softmax_cross_entropy_kernel(const float* logits, const int* labels, int classes, float smoothing,
                                             float grad_scale, int rows, float* grad, float* loss, int* higher) {
    __shared__ float reduce_f[threads];
    __shared__ int reduce_i[threads];
    const int r = blockIdx.x;
    const float* row = logits + std::size_t(r) * classes;
    const int label = labels[r];
    float top = -INFINITY;
    for (int k = threadIdx.x; k < classes; k += threads) top = fmaxf(top, row[k]);
    reduce_f[threadIdx.x] = top;
    __syncthreads();
    for (int half = threads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) reduce_f[threadIdx.x] = fmaxf(reduce_f[threadIdx.x], reduce_f[threadIdx.x + half]);
        __syncthreads();
    }
    top = reduce_f[0];
    __syncthreads();
    float sum = 0, shifted_sum = 0;
    int above = 0;
    const float target_score = row[label];
    for (int k = threadIdx.x; k < classes; k += threads) {
        sum += expf(row[k] - top);
        shifted_sum += row[k] - top;
        above += k != label && (row[k] >= target_score || !isfinite(row[k]));  // ties are misses
    }
    sum = block_sum(sum, reduce_f);
    shifted_sum = block_sum(shifted_sum, reduce_f);
    above = block_sum(above, reduce_i);
    const float log_sum = logf(sum);
    const float off = smoothing / classes, on = 1.0f - smoothing + off;
    if (threadIdx.x == 0) {
        // -sum_k t_k (x_k - top - log_sum), with t = off everywhere plus (on - off) at the label
        loss[r] = -(off * (shifted_sum - classes * log_sum) + (on - off) * (target_score - top - log_sum));
        higher[r] = isfinite(target_score) ? above : classes;
    }
    if (grad)
        for (int k = threadIdx.x; k < classes; k += threads) {
            float p = expf(row[k] - top) / sum;
            grad[std::size_t(r) * classes + k] = (p - (k == label ? on : off)) * grad_scale / rows;
        }
}

__device__ inline int parameter_of(const ParameterTable& table, std::int64_t i) {
    int low = 0, high = table.count - 1;
    while (low < high) {  // the last parameter whose offset is <= i
        int middle = (low + high + 1) / 2;
        if (table.offsets[middle] <= i)
            low = middle;
        else
            high = middle - 1;
    }
    return low;
}

__global__ void optimizer_kernel(float* w, const float* g, float* v, float* second, ParameterTable table, void* low,
                                 DType low_type, std::size_t n, OptimizerStep step) {
    if (step.skip_when_set && *step.skip_when_set) return;
    FOR_EACH(i, n) {
        int p = parameter_of(table, std::int64_t(i));
        float d = g[i] + table.decay[p] * w[i];
        float updated;
        switch (step.kind) {
        case OptimizerKind::rmsprop: {
            float s = second[i] = step.rho * second[i] + (1 - step.rho) * d * d;
            float velocity = v[i] = step.momentum * v[i] + step.lr * d / sqrtf(s + step.epsilon);
            updated = w[i] - velocity;
            break;
        }
        case OptimizerKind::lars: {
            float velocity = v[i] = step.momentum * v[i] + step.lr * table.lr_factor[p] * d;
            updated = w[i] - velocity;
            break;
        }
        default: {
            float velocity = v[i] = step.momentum * v[i] + d;
            updated = w[i] - step.lr * (step.nesterov ? d + step.momentum * velocity : velocity);
        }
        }
        w[i] = updated;
        if (low) store(low, i, low_type, updated);
    }
}

// Grid: (blocks per parameter, parameters).
__global__ void parameter_norms_kernel(const float* w, const float* g, ParameterTable table, double* sums) {
    __shared__ double reduce[threads];
    const int p = blockIdx.y;
    const std::int64_t begin = table.offsets[p], end = table.offsets[p + 1];
    double w2 = 0, g2 = 0;
    for (std::int64_t i = begin + blockIdx.x * std::int64_t(threads) + threadIdx.x; i < end;
         i += std::int64_t(gridDim.x) * threads) {
        w2 += double(w[i]) * w[i];
        g2 += double(g[i]) * g[i];
    }
    w2 = block_sum(w2, reduce);
    g2 = block_sum(g2, reduce);
    if (threadIdx.x == 0) {
        atomicAdd(&sums[2 * p], w2);
        atomicAdd(&sums[2 * p + 1], g2);
    }
}

__global__ void scale_and_check_kernel(float* g, std::size_t n, float factor, int* nonfinite) {
    bool bad = false;
    FOR_EACH(i, n) {
        float value = g[i] * factor;
        bad |= !isfinite(value);
        g[i] = value;
    }
    if (bad) *nonfinite = 1;
}

}  // namespace

void convert(const void* src, DType from, void* dst, DType to, std::size_t n, float scale, cudaStream_t stream) {
    convert_kernel<<<blocks_for(n), threads, 0, stream>>>(src, from, dst, to, n, scale);
    launched("convert_kernel");
}

void normalise_pixels(const std::uint8_t* src, void* dst, DType to, std::size_t n, const float* gain, const float* bias,
                      cudaStream_t stream) {
    ChannelAffine affine{};
    for (int c = 0; c < 3; ++c) affine.gain[c] = gain[c], affine.bias[c] = bias[c];
    normalise_pixels_kernel<<<blocks_for(n), threads, 0, stream>>>(src, dst, to, n, affine);
    launched("normalise_pixels_kernel");
}

void use_vector_kernels(bool use) { vector_kernels = use; }

void add_relu(const void* a, const void* b, void* y, DType type, std::size_t n, cudaStream_t stream) {
    if (launched_as_vectors(a, b, y, type, n, AddRelu{}, stream)) return;
    add_relu_kernel<<<blocks_for(n), threads, 0, stream>>>(a, b, y, type, n);
    launched("add_relu_kernel");
}

void relu_backward(const void* y, const void* dy, void* dx, DType type, std::size_t n, cudaStream_t stream) {
    if (launched_as_vectors(y, dy, dx, type, n, ReluBackward{}, stream)) return;
    relu_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(y, dy, dx, type, n);
    launched("relu_backward_kernel");
}

void relu(const void* x, void* y, DType type, std::size_t n, cudaStream_t stream) {
    if (launched_as_vectors(x, nullptr, y, type, n, Relu{}, stream)) return;
    relu_kernel<<<blocks_for(n), threads, 0, stream>>>(x, y, type, n);
    launched("relu_kernel");
}

void dropout(const float* x, float* y, std::size_t n, std::uint64_t key, std::uint64_t threshold, float scale,
             cudaStream_t stream) {
    dropout_kernel<<<blocks_for(n), threads, 0, stream>>>(x, y, n, key, threshold, scale);
    launched("dropout_kernel");
}

void pad_end(const void* x, void* y, DType type, int n, int h, int w, int c, int extra_h, int extra_w, float fill,
             cudaStream_t stream) {
    std::size_t count = std::size_t(n) * (h + extra_h) * (w + extra_w) * c;
    pad_end_kernel<<<blocks_for(count), threads, 0, stream>>>(x, y, type, n, h, w, c, extra_h, extra_w, fill);
    launched("pad_end_kernel");
}

void crop_end(const void* dy, void* dx, DType type, int n, int h, int w, int c, int extra_h, int extra_w,
              cudaStream_t stream) {
    std::size_t count = std::size_t(n) * h * w * c;
    crop_end_kernel<<<blocks_for(count), threads, 0, stream>>>(dy, dx, type, n, h, w, c, extra_h, extra_w);
    launched("crop_end_kernel");
}

void accumulate(void* target, const void* addend, DType type, std::size_t n, cudaStream_t stream) {
    if (launched_as_vectors(target, addend, target, type, n, Add{}, stream)) return;
    accumulate_kernel<<<blocks_for(n), threads, 0, stream>>>(target, addend, type, n);
    launched("accumulate_kernel");
}

void global_average_pool(const void* x, DType type, float* y, int n, int hw, int c, cudaStream_t stream) {
    gap_kernel<<<blocks_for(std::size_t(n) * c), threads, 0, stream>>>(x, type, y, n, hw, c);
    launched("gap_kernel");
}

void global_average_pool_backward(const float* dy, void* dx, DType type, int n, int hw, int c, cudaStream_t stream) {
    gap_backward_kernel<<<blocks_for(std::size_t(n) * hw * c), threads, 0, stream>>>(dy, dx, type, n, hw, c);
    launched("gap_backward_kernel");
}

void add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t stream) {
    add_bias_kernel<<<blocks_for(std::size_t(rows) * cols), threads, 0, stream>>>(y, bias, rows, cols);
    launched("add_bias_kernel");
}

void bias_gradient(const float* dy, float* grad, int rows, int cols, cudaStream_t stream) {
    bias_gradient_kernel<<<blocks_for(std::size_t(cols)), threads, 0, stream>>>(dy, grad, rows, cols);
    launched("bias_gradient_kernel");
}

void add_channel_bias(void* y, DType type, const float* bias, std::size_t rows, int channels, cudaStream_t stream) {
    add_channel_bias_kernel<<<blocks_for(rows * channels), threads, 0, stream>>>(y, type, bias, rows, channels);
    launched("add_channel_bias_kernel");
}

int channel_gradient_blocks(std::size_t rows) { return int(std::min<std::size_t>(1024, (rows + 63) / 64)); }

void channel_bias_gradient(const void* dy, DType type, float* grad, std::size_t rows, int channels, float* partial,
                           cudaStream_t stream) {
    int blocks = channel_gradient_blocks(rows);
    std::size_t rows_per_block = (rows + std::size_t(blocks) - 1) / std::size_t(blocks);
    channel_sums_kernel<<<unsigned(blocks), threads, 0, stream>>>(dy, type, partial, rows, channels, rows_per_block);
    launched("channel_sums_kernel");
    sum_blocks_kernel<<<blocks_for(std::size_t(channels)), threads, 0, stream>>>(partial, grad, blocks, channels);
    launched("sum_blocks_kernel");
}

void softmax_cross_entropy(const float* logits, const int* labels, int rows, int classes, float smoothing,
                           float grad_scale, float* grad, float* loss, int* higher, cudaStream_t stream) {
    softmax_cross_entropy_kernel<<<unsigned(rows), threads, 0, stream>>>(logits, labels, classes, smoothing, grad_scale,
                                                                         rows, grad, loss, higher);
    launched("softmax_cross_entropy_kernel");
}

void optimizer_step(float* w, const float* g, float* v, float* second, ParameterTable table, void* low, DType low_type,
                    std::size_t n, OptimizerStep step, cudaStream_t stream) {
    optimizer_kernel<<<blocks_for(n), threads, 0, stream>>>(w, g, v, second, table, low, low_type, n, step);
    launched("optimizer_kernel");
}

void parameter_norms(const float* w, const float* g, ParameterTable table, double* sums, cudaStream_t stream) {
    cudaError_t cleared = cudaMemsetAsync(sums, 0, sizeof(double) * 2 * std::size_t(table.count), stream);
    if (cleared != cudaSuccess) launch_failed("cudaMemsetAsync (the LARS norms)", cleared);
    dim3 grid(64, unsigned(table.count));
    parameter_norms_kernel<<<grid, threads, 0, stream>>>(w, g, table, sums);
    launched("parameter_norms_kernel");
}

void scale_and_check(float* g, std::size_t n, float factor, int* nonfinite, cudaStream_t stream) {
    scale_and_check_kernel<<<blocks_for(n), threads, 0, stream>>>(g, n, factor, nonfinite);
    launched("scale_and_check_kernel");
}

}  // namespace trellis::cuda::kernels
