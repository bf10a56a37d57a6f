# SPDX-License-Identifier: Apache-2.0
# trellis-cuda.so: the CUDA backend (cuDNN, cuBLAS, NCCL and the module's kernels), a module
# that trellis-train loads at run time (trainer/gpu/open_cuda.cpp), so that the programs run
# where CUDA is not installed. Built when configure finds nvcc, cuDNN and NCCL's header: NCCL
# itself is loaded with dlopen when a step uses it (nccl_library.hpp), not linked.
cuda_sources = \
	trainer/cuda/accelerator.cpp \
	trainer/cuda/activations.cpp trainer/cuda/activations.hpp \
	trainer/cuda/backend.cpp trainer/cuda/backend.hpp \
	trainer/cuda/batch_norm.cpp trainer/cuda/batch_norm.hpp \
	trainer/cuda/channel_concat.cpp trainer/cuda/channel_concat.hpp \
	trainer/cuda/check.cpp trainer/cuda/check.hpp \
	trainer/cuda/context.cpp trainer/cuda/context.hpp \
	trainer/cuda/convolution.cpp trainer/cuda/convolution.hpp \
	trainer/cuda/device_loss.cpp trainer/cuda/device_loss.hpp \
	trainer/cuda/device_optimizer.cpp trainer/cuda/device_optimizer.hpp \
	trainer/cuda/device_parameters.cpp trainer/cuda/device_parameters.hpp \
	trainer/cuda/device_pool.cpp trainer/cuda/device_pool.hpp \
	trainer/cuda/end_padding.cpp trainer/cuda/end_padding.hpp \
	trainer/cuda/handles.cpp trainer/cuda/handles.hpp \
	trainer/cuda/kernels.hpp \
	trainer/cuda/layer_profile.cpp trainer/cuda/layer_profile.hpp \
	trainer/cuda/linear.cpp trainer/cuda/linear.hpp \
	trainer/cuda/nccl_allreduce.cpp trainer/cuda/nccl_allreduce.hpp \
	trainer/cuda/nccl_library.cpp trainer/cuda/nccl_library.hpp \
	trainer/cuda/pooling.cpp trainer/cuda/pooling.hpp \
	trainer/cuda/residual_join.cpp trainer/cuda/residual_join.hpp trainer/cuda/fused_norm_join.hpp

if HAVE_CUDA
pkglib_LTLIBRARIES = trellis-cuda.la
trellis_cuda_la_SOURCES = $(cuda_sources)
trellis_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(CUDA_DIR)/include
# The legacy cuDNN API (convolution, batch norm) is deprecated in cuDNN 9 but still whole.
trellis_cuda_la_CXXFLAGS = $(AM_CXXFLAGS) -Wno-deprecated-declarations
# Symbols of the trainer (tensors, parameter store, optimizer base, the library search) come
# from the program that loads the module. The CUDA runtime is linked statically; the program
# loads cuDNN and cuBLAS before the module (trainer/gpu/cuda_libraries.hpp), CUDA_DIR's lib64
# (the RUNPATH) being its last folder.
trellis_cuda_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -L$(CUDA_DIR)/lib64 -Wl,-rpath,$(CUDA_DIR)/lib64
trellis_cuda_la_LIBADD = trainer/cuda/kernels.lo -lcudnn -lcublas -lcudart_static -ldl -lrt -lpthread
trellis_cuda_la_DEPENDENCIES = trainer/cuda/kernels.lo

# Kernels for the compute capabilities configure chose (--with-cuda-archs), plus PTX of the
# newest; kernels call constexpr host functions (nn/dropout_mask.hpp's mask). nvcc is no
# compiler libtool knows: libtool runs it through nvcc-pic, which hands the
# position-independent-code flag to the host compiler, and writes kernels.lo itself.
NVCC_FLAGS = -std=c++20 -O3 --expt-relaxed-constexpr -I$(top_srcdir) $(NVCC_GENCODE)
trainer/cuda/kernels.lo: trainer/cuda/kernels.cu trainer/cuda/kernels.hpp trainer/tensor/dtype.hpp trainer/nn/dropout_mask.hpp
	$(AM_V_GEN)$(LIBTOOL) $(AM_V_lt) --tag=CXX --mode=compile $(srcdir)/trainer/cuda/nvcc-pic $(CUDA_DIR)/bin/nvcc \
		$(NVCC_FLAGS) -c $(srcdir)/trainer/cuda/kernels.cu -o $@
CLEANFILES += trainer/cuda/kernels.lo trainer/cuda/.libs/kernels.o
endif
