# SPDX-License-Identifier: Apache-2.0
# The trainer in layers, bottom up. Each library is compiled alone and links none of the
# others: the *_LIBS variable beside it names it and every library it may use, and programs
# and tests link through those variables, so that a call in the wrong direction fails to
# link (and scripts/check-layers, run by every build, refuses the include first).
#   tensor <- nn (layers, CPU backend, models, optimizers) <- checkpoint (also data)
#   comm (collectives, transports, wireups) <- ps (parameter server; also checkpoint)
#   train (the training loop, the GPU interface) <- all of them
noinst_LTLIBRARIES += trainer/libtrellis-tensor.la
trainer_libtrellis_tensor_la_SOURCES = \
	trainer/tensor/buffer_pool.cpp trainer/tensor/buffer_pool.hpp \
	trainer/tensor/dtype.hpp \
	trainer/tensor/shape.cpp trainer/tensor/shape.hpp \
	trainer/tensor/tensor.cpp trainer/tensor/tensor.hpp
TENSOR_LIBS = trainer/libtrellis-tensor.la common/libtrellis-common.la

noinst_LTLIBRARIES += trainer/libtrellis-nn.la
trainer_libtrellis_nn_la_SOURCES = \
	trainer/nn/backend.hpp trainer/nn/layer.hpp trainer/nn/parameter.hpp \
	trainer/nn/concat.cpp trainer/nn/concat.hpp \
	trainer/nn/dropout.cpp trainer/nn/dropout.hpp trainer/nn/dropout_mask.cpp trainer/nn/dropout_mask.hpp \
	trainer/nn/layer_parameters.cpp trainer/nn/layer_parameters.hpp \
	trainer/nn/parameter_store.cpp trainer/nn/parameter_store.hpp \
	trainer/nn/residual_block.cpp trainer/nn/residual_block.hpp \
	trainer/nn/normalized_join.cpp trainer/nn/normalized_join.hpp \
	trainer/nn/sequential.cpp trainer/nn/sequential.hpp \
	trainer/nn/softmax_cross_entropy.cpp trainer/nn/softmax_cross_entropy.hpp \
	trainer/nn/window.cpp trainer/nn/window.hpp \
	trainer/nn/cpu/batch_norm.cpp trainer/nn/cpu/batch_norm.hpp \
	trainer/nn/cpu/channel_concat.cpp trainer/nn/cpu/channel_concat.hpp \
	trainer/nn/cpu/channel_statistics.cpp trainer/nn/cpu/channel_statistics.hpp \
	trainer/nn/cpu/convolution.cpp trainer/nn/cpu/convolution.hpp \
	trainer/nn/cpu/convolution_probe.cpp trainer/nn/cpu/convolution_probe.hpp \
	trainer/nn/cpu/cpu_backend.cpp trainer/nn/cpu/cpu_backend.hpp \
	trainer/nn/cpu/dnnl_context.cpp trainer/nn/cpu/dnnl_context.hpp \
	trainer/nn/cpu/dnnl_version.cpp trainer/nn/cpu/dnnl_version.hpp \
	trainer/nn/cpu/dropout.cpp trainer/nn/cpu/dropout.hpp \
	trainer/nn/cpu/linear.cpp trainer/nn/cpu/linear.hpp \
	trainer/nn/cpu/pooling.cpp trainer/nn/cpu/pooling.hpp \
	trainer/nn/cpu/reference_kernels.cpp trainer/nn/cpu/reference_kernels.hpp \
	trainer/nn/cpu/relu.cpp trainer/nn/cpu/relu.hpp \
	trainer/nn/cpu/residual_join.cpp trainer/nn/cpu/residual_join.hpp \
	trainer/models/alexnet.cpp trainer/models/architecture.cpp trainer/models/architecture.hpp \
	trainer/models/googlenet.cpp trainer/models/inception3.cpp trainer/models/inception4.cpp \
	trainer/models/layer_column.cpp trainer/models/layer_column.hpp \
	trainer/models/model.cpp trainer/models/model.hpp \
	trainer/models/resnet.cpp trainer/models/resnet.hpp \
	trainer/models/tf_models.hpp trainer/models/vgg.cpp \
	trainer/optim/lars.cpp trainer/optim/lars.hpp \
	trainer/optim/optimizer.cpp trainer/optim/optimizer.hpp \
	trainer/optim/rmsprop.cpp trainer/optim/rmsprop.hpp \
	trainer/optim/schedule.cpp trainer/optim/schedule.hpp \
	trainer/optim/sgd.cpp trainer/optim/sgd.hpp
trainer_libtrellis_nn_la_CXXFLAGS = $(AM_CXXFLAGS) -fopenmp
trainer_libtrellis_nn_la_LIBADD = $(DNNL_LIBS) -lgomp
NN_LIBS = trainer/libtrellis-nn.la $(TENSOR_LIBS)

noinst_LTLIBRARIES += trainer/libtrellis-checkpoint.la
trainer_libtrellis_checkpoint_la_SOURCES = trainer/checkpoint/checkpoint.cpp trainer/checkpoint/checkpoint.hpp
trainer_libtrellis_checkpoint_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSON_CFLAGS)
CHECKPOINT_LIBS = trainer/libtrellis-checkpoint.la $(NN_LIBS) $(DATA_LIBS)

noinst_LTLIBRARIES += trainer/libtrellis-comm.la
trainer_libtrellis_comm_la_SOURCES = \
	trainer/comm/allreduce.cpp trainer/comm/allreduce.hpp \
	trainer/comm/barrier.cpp trainer/comm/barrier.hpp trainer/comm/binomial_tree.hpp \
	trainer/comm/broadcast.cpp trainer/comm/broadcast.hpp \
	trainer/comm/bucketed_allreduce.cpp trainer/comm/bucketed_allreduce.hpp \
	trainer/comm/comm_error.hpp trainer/comm/comm_stats.hpp trainer/comm/gradient_buckets.hpp \
	trainer/comm/failure_notice.cpp trainer/comm/failure_notice.hpp \
	trainer/comm/gate.cpp trainer/comm/gate.hpp \
	trainer/comm/group_transport.cpp trainer/comm/group_transport.hpp \
	trainer/comm/handshake.cpp trainer/comm/handshake.hpp \
	trainer/comm/halving_doubling_allreduce.cpp trainer/comm/halving_doubling_allreduce.hpp \
	trainer/comm/hierarchical_allreduce.cpp trainer/comm/hierarchical_allreduce.hpp \
	trainer/comm/job_secret.cpp trainer/comm/job_secret.hpp \
	trainer/comm/make_transport.cpp trainer/comm/make_transport.hpp \
	trainer/comm/pmix_wireup.cpp trainer/comm/pmix_wireup.hpp \
	trainer/comm/rendezvous.cpp trainer/comm/rendezvous.hpp \
	trainer/comm/ring_allreduce.cpp trainer/comm/ring_allreduce.hpp \
	trainer/comm/segmented_exchange.cpp trainer/comm/segmented_exchange.hpp \
	trainer/comm/shared_memory_transport.cpp trainer/comm/shared_memory_transport.hpp \
	trainer/comm/shm_mailbox.cpp trainer/comm/shm_mailbox.hpp \
	trainer/comm/socket.cpp trainer/comm/socket.hpp \
	trainer/comm/tcp_links.cpp trainer/comm/tcp_links.hpp \
	trainer/comm/tcp_transport.cpp trainer/comm/tcp_transport.hpp trainer/comm/tcp_watch.cpp \
	trainer/comm/watch_graph.cpp trainer/comm/watch_graph.hpp \
	trainer/comm/transport.hpp \
	trainer/comm/verbs_device.cpp trainer/comm/verbs_device.hpp \
	trainer/comm/verbs_resources.hpp \
	trainer/comm/verbs_transport.cpp trainer/comm/verbs_transport.hpp \
	trainer/comm/wire_format.cpp trainer/comm/wire_format.hpp \
	trainer/comm/wireup.cpp trainer/comm/wireup.hpp
trainer_libtrellis_comm_la_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CFLAGS) $(SLURM_CPPFLAGS) $(IBVERBS_CFLAGS) $(LIBCRYPTO_CFLAGS)
trainer_libtrellis_comm_la_CXXFLAGS = $(AM_CXXFLAGS) -pthread -fopenmp-simd
trainer_libtrellis_comm_la_LIBADD = $(PMIX_LIBS) $(IBVERBS_LIBS) $(LIBCRYPTO_LIBS)
COMM_LIBS = trainer/libtrellis-comm.la slurm/libtrellis-slurm-nodes.la common/libtrellis-common.la

noinst_LTLIBRARIES += trainer/libtrellis-ps.la
trainer_libtrellis_ps_la_SOURCES = \
	trainer/ps/layout.cpp trainer/ps/layout.hpp trainer/ps/messages.hpp \
	trainer/ps/server.cpp trainer/ps/server.hpp \
	trainer/ps/worker.cpp trainer/ps/worker.hpp
trainer_libtrellis_ps_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSON_CFLAGS)
PS_LIBS = trainer/libtrellis-ps.la $(CHECKPOINT_LIBS) $(COMM_LIBS)

noinst_LTLIBRARIES += trainer/libtrellis-train.la
trainer_libtrellis_train_la_SOURCES = \
	trainer/gpu/accelerator.hpp trainer/gpu/algorithm_choice.hpp trainer/gpu/open_cuda.cpp \
	trainer/gpu/padded_layout.hpp \
	trainer/gpu/cuda_libraries.cpp trainer/gpu/cuda_libraries.hpp \
	trainer/gpu/elf_dynamic.cpp trainer/gpu/elf_dynamic.hpp \
	trainer/gpu/speedups.cpp trainer/gpu/speedups.hpp \
	trainer/gpu/loss_scaler.hpp \
	trainer/gpu/precision.cpp trainer/gpu/precision.hpp \
	trainer/train/data_sources.cpp trainer/train/data_sources.hpp \
	trainer/train/evaluation.cpp trainer/train/evaluation.hpp \
	trainer/train/gradient_sync.cpp trainer/train/gradient_sync.hpp trainer/train/nccl_vote.hpp \
	trainer/train/global_batch_advice.cpp trainer/train/global_batch_advice.hpp \
	trainer/train/metrics_log.cpp trainer/train/metrics_log.hpp \
	trainer/train/open_device.cpp trainer/train/open_device.hpp \
	trainer/train/options.cpp trainer/train/options.hpp \
	trainer/train/parameter_server.cpp trainer/train/parameter_server.hpp \
	trainer/train/run_facts.cpp trainer/train/run_facts.hpp \
	trainer/train/run_header.cpp trainer/train/run_header.hpp \
	trainer/train/run_clock.hpp trainer/train/run_start.hpp \
	trainer/train/stop_request.cpp trainer/train/stop_request.hpp \
	trainer/train/throughput.cpp trainer/train/throughput.hpp \
	trainer/train/model_batch.cpp trainer/train/model_batch.hpp \
	trainer/train/time_to_accuracy.cpp trainer/train/time_to_accuracy.hpp \
	trainer/train/trainer.cpp trainer/train/trainer.hpp trainer/train/run.hpp trainer/train/run_continuity.cpp
trainer_libtrellis_train_la_CPPFLAGS = $(AM_CPPFLAGS) -DTRELLIS_PKGLIBDIR='"$(pkglibdir)"' $(JSON_CFLAGS)
trainer_libtrellis_train_la_CXXFLAGS = $(AM_CXXFLAGS) -fopenmp
trainer_libtrellis_train_la_LIBADD = -ldl
TRAIN_LIBS = trainer/libtrellis-train.la $(PS_LIBS)

bin_PROGRAMS += trellis-train
trellis_train_SOURCES = trainer/trellis-train.cpp
trellis_train_LDADD = $(TRAIN_LIBS)
# The CUDA module resolves the trainer's symbols from the program.
trellis_train_LDFLAGS = $(AM_LDFLAGS) -export-dynamic

bin_PROGRAMS += trellis-bench
trellis_bench_SOURCES = trainer/trellis-bench.cpp \
	trainer/bench/allreduce_benchmark.cpp trainer/bench/bench_options.cpp trainer/bench/bench_options.hpp \
	trainer/bench/benchmarks.hpp trainer/bench/data_benchmark.cpp trainer/bench/p2p_benchmark.cpp \
	trainer/bench/ps_benchmark.cpp trainer/bench/results.cpp trainer/bench/results.hpp
trellis_bench_CPPFLAGS = $(AM_CPPFLAGS) $(JSON_CFLAGS)
trellis_bench_LDADD = $(COMM_LIBS) $(DATA_LIBS)

# Example batch scripts, installed with the documentation.
examplesdir = $(docdir)/examples
dist_examples_DATA = etc/sbatch/resnet50-allreduce.sbatch etc/sbatch/resnet50-ps.sbatch

# Its tests (built with the trainer), each library's units in one binary linking only that
# library and what it may use: the layers' gradients, the loss, optimizers and schedules
# (nn); checkpoints; the options (train).
unit_tests += tests/unit/nn_test tests/unit/checkpoint_test tests/unit/train_options_test
tests_unit_nn_test_SOURCES = tests/unit/layers_gradient_test.cpp tests/unit/gradient_check.cpp \
	tests/unit/gradient_check.hpp tests/unit/loss_test.cpp tests/unit/optimizer_test.cpp tests/unit/schedule_test.cpp \
	tests/unit/model_test.cpp
tests_unit_nn_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_nn_test_LDADD = tests/unit/libcatch-main.la $(NN_LIBS)
# The convolution's refusal of oneDNN's reference kernels, in a binary of its own: it caps the
# ISA, which must happen before the process's first primitive.
unit_tests += tests/unit/reference_kernels_test
tests_unit_reference_kernels_test_SOURCES = tests/unit/reference_kernels_test.cpp tests/unit/gradient_check.cpp \
	tests/unit/gradient_check.hpp
tests_unit_reference_kernels_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_reference_kernels_test_LDADD = tests/unit/libcatch-main.la $(NN_LIBS)
tests_unit_checkpoint_test_SOURCES = tests/unit/checkpoint_test.cpp
tests_unit_checkpoint_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_checkpoint_test_LDADD = tests/unit/libcatch-main.la $(CHECKPOINT_LIBS)
tests_unit_train_options_test_SOURCES = tests/unit/train_options_test.cpp tests/unit/nccl_vote_test.cpp \
	tests/unit/global_batch_advice_test.cpp
tests_unit_train_options_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_train_options_test_LDADD = tests/unit/libcatch-main.la $(TRAIN_LIBS)
# The stop signals and the threads that compute, in a binary of its own: signal dispositions
# and masks are the process's.
unit_tests += tests/unit/stop_signals_test
tests_unit_stop_signals_test_SOURCES = tests/unit/stop_signals_test.cpp
tests_unit_stop_signals_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_stop_signals_test_LDADD = tests/unit/libcatch-main.la $(TRAIN_LIBS)
unit_tests += tests/unit/gpu_host_test
tests_unit_gpu_host_test_SOURCES = tests/unit/gpu_host_test.cpp
tests_unit_gpu_host_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_gpu_host_test_LDADD = tests/unit/libcatch-main.la $(TRAIN_LIBS)
# tf_cnn_benchmarks' models against PyTorch: one step of a model, written out for the peer.
check_PROGRAMS += tests/models/zoo_export
tests_models_zoo_export_SOURCES = tests/models/zoo_export.cpp
tests_models_zoo_export_CPPFLAGS = $(AM_CPPFLAGS) $(JSON_CFLAGS)
tests_models_zoo_export_LDADD = $(NN_LIBS)

# trellis-train end to end (the list is in Makefile.am, so that every tarball has them).
TESTS += $(train_tests)

# The CUDA backend against the CPU backend, and training on the GPU; both skip without a GPU.
# Where the CUDA libraries are found and what is said when they are not, without a GPU; the
# GPU machine's bundle (scripts/gpu-bundle) run cold in a Debian 13 root.
check_PROGRAMS += tests/gpu/layers_test
tests_gpu_layers_test_SOURCES = tests/gpu/layers_test.cpp
tests_gpu_layers_test_LDADD = $(TRAIN_LIBS)
tests_gpu_layers_test_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
TESTS += tests/gpu/layers_test tests/gpu/learns_test.sh tests/gpu/cuda_libraries_test.sh tests/gpu/bundle_test.sh

# The communication layer: ranks as threads over real TCP connections.
unit_tests += tests/unit/comm_test
tests_unit_comm_test_SOURCES = tests/unit/comm_test.cpp tests/unit/ranks_in_threads.hpp
tests_unit_comm_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_comm_test_LDADD = tests/unit/libcatch-main.la $(COMM_LIBS)
unit_tests += tests/unit/shm_transport_test
tests_unit_shm_transport_test_SOURCES = tests/unit/shm_transport_test.cpp tests/unit/ranks_in_threads.hpp
tests_unit_shm_transport_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_shm_transport_test_LDADD = tests/unit/libcatch-main.la $(COMM_LIBS)
