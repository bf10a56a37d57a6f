// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/check.hpp"

#include "trainer/cuda/kernels.hpp"
#include "trainer/cuda/nccl_library.hpp"

namespace trellis::cuda {

void check(cudaError_t status, const std::string& what) {
    if (status != cudaSuccess) throw CudaError("CUDA: " + what + ": " + cudaGetErrorString(status));
}

void kernels::launch_failed(const char* kernel, cudaError_t status) {
    throw CudaError(std::string("CUDA: launching ") + kernel + ": " + cudaGetErrorString(status));
}

void check(cudnnStatus_t status, const std::string& what) {
    if (status != CUDNN_STATUS_SUCCESS) throw CudaError("cuDNN: " + what + ": " + cudnnGetErrorString(status));
}

void check(cublasStatus_t status, const std::string& what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw CudaError("cuBLAS: " + what + ": " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) +
                        ")");
}

void check(ncclResult_t status, const std::string& what) {
    if (status == ncclSuccess) return;
    const NcclLibrary* nccl = nccl_if_loaded();
    throw CudaError("NCCL: " + what + ": " +
                    (nccl ? nccl->get_error_string(status) : "error " + std::to_string(int(status))));
}

}  // namespace trellis::cuda
