# SPDX-License-Identifier: Apache-2.0
# Unit tests (Catch2, one binary per unit), the trellis-topo command-line tests and the
# checks over ../shared/fixtures/topology. Binaries exit 77 ("skipped") when what they need
# is absent, so that a skip is never counted as a pass.
tests_unit_libcatch_main_la_SOURCES = tests/unit/catch_main.cpp tests/unit/fixtures.hpp tests/catch.hpp
tests_unit_libcatch_main_la_CPPFLAGS = $(AM_CPPFLAGS) $(CATCH2_CFLAGS)
tests_unit_libcatch_main_la_LIBADD = $(CATCH2_LIBS)

UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CATCH2_CFLAGS) $(JSON_CFLAGS) \
	-DTRELLIS_SOURCE_DIR='"$(abs_top_srcdir)"'
UNIT_LDADD = tests/unit/libcatch-main.la topology/libtrellis-topology.la

AM_TESTS_ENVIRONMENT = \
	TRELLIS_TOPO='$(abs_top_builddir)/trellis-topo'; export TRELLIS_TOPO; \
	TRELLIS_BUILD='$(abs_top_builddir)'; export TRELLIS_BUILD; \
	TRELLIS_CUDA_MODULE='$(abs_top_builddir)/.libs/trellis-cuda.so'; export TRELLIS_CUDA_MODULE; \
	TRELLIS_FIXTURES='$(abs_top_srcdir)/tests/fixtures'; export TRELLIS_FIXTURES; \
	TRELLIS_STUDIES_PYTHON='$(abs_top_srcdir)/studies'; export TRELLIS_STUDIES_PYTHON; \
	PYTHON3='$(PYTHON3)'; export PYTHON3; \
	TRELLIS_ZOO_MODELS='$(TRELLIS_ZOO_MODELS)'; export TRELLIS_ZOO_MODELS;

# The performance benchmarks print figures and ratios; `make perf` runs them.
EXTRA_DIST += tests/perf/run tests/perf/slurm_launch tests/perf/fuzz/run tests/perf/fuzz/parsers_fuzz.cpp \
	tests/perf/trainer_vs_pytorch tests/perf/container_vs_native tests/perf/apptainer_vs_native tests/perf/registry_image \
	tests/perf/allreduce_vs_peers tests/perf/mpi_allreduce.c tests/perf/gloo_allreduce.py \
	tests/perf/training_scaling tests/perf/verbs_vs_ib_write_bw \
	tests/perf/gpu_vs_pytorch tests/perf/pytorch_resnet_gpu.py \
	tests/perf/time_to_accuracy tests/perf/pytorch_fashion_mnist.py tests/perf/data_vs_pytorch tests/perf/pytorch_data.py \
	tests/perf/fashion_mnist_srun tests/perf/models_vs_pytorch tests/perf/pytorch_zoo.py tests/perf/comm_bound_models \
	tests/perf/shaped_network tests/perf/budget.sh tests/perf/sgemm_peak.py tests/perf/rank_scaling

perf: all
	$(srcdir)/tests/perf/run '$(abs_top_builddir)' '$(abs_top_srcdir)'
# Each benchmark once at its smallest size: that it runs, beside its peer (scripts/test).
perf-smallest: all
	TRELLIS_PERF_SIZE=smallest $(srcdir)/tests/perf/run '$(abs_top_builddir)' '$(abs_top_srcdir)'
# The long benchmarks, too slow for every run: Fashion-MNIST trained to accuracy (about an hour
# for each of trellis and PyTorch on 2 cores), then to 0.94 with 2 ranks through srun on the
# test cluster (half an hour); AlexNet's gradients between 2 and 4 ranks, allreduce in f32 and
# bf16 against a parameter server (a few minutes); ResNet-50 on the shaped network, 1 to 4
# nodes, both profiles (about 10 minutes); the per-model table with oneDNN capped at AVX2 on an
# AVX-512 CPU (about 7 minutes); a 1 GiB image's start through Apptainer against trellis's own
# squashfs path (about a minute, with the Debian 13 root that has Apptainer); 64, 256 and 512 ranks
# of trellis-bench on this machine, what each holds and how long the job lasts (a minute; with
# TRELLIS_BEFORE_BENCH an older build's beside it, minutes more).
perf-long: all
	$(srcdir)/tests/perf/rank_scaling '$(abs_top_builddir)' '$(abs_top_srcdir)'
	$(srcdir)/tests/perf/models_vs_pytorch '$(abs_top_builddir)' '$(abs_top_srcdir)' avx2
	$(srcdir)/tests/perf/time_to_accuracy '$(abs_top_builddir)' '$(abs_top_srcdir)' long
	$(srcdir)/tests/perf/fashion_mnist_srun '$(abs_top_builddir)' '$(abs_top_srcdir)'
	$(srcdir)/tests/perf/comm_bound_models '$(abs_top_builddir)' '$(abs_top_srcdir)'
	$(srcdir)/tests/perf/shaped_network '$(abs_top_builddir)' '$(abs_top_srcdir)' training
	$(srcdir)/tests/perf/apptainer_vs_native '$(abs_top_builddir)' '$(abs_top_srcdir)' big
.PHONY: perf perf-smallest perf-long

# The plugin under a real two-node Slurm cluster (skips without root, Slurm or munge). The
# PMIx probe is built where PMIx is found; without it, its checks skip.
if HAVE_PMIX
check_PROGRAMS += tests/slurm/pmix_exchange
tests_slurm_pmix_exchange_SOURCES = tests/slurm/pmix_exchange.cpp
tests_slurm_pmix_exchange_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CFLAGS)
tests_slurm_pmix_exchange_LDADD = $(PMIX_LIBS)
endif
TESTS += tests/slurm/slurm_test.sh tests/slurm/train_test.sh tests/slurm/container_test.sh \
	tests/slurm/gpu_test.sh tests/slurm/frameworks_test.sh tests/slurm/cpu_alloc_test.sh tests/slurm/registry_test.sh \
	tests/slurm/squashfs_test.sh tests/slurm/cdi_test.sh tests/slurm/image_spread_test.sh
EXTRA_DIST += tests/slurm/apptainer_test.sh tests/slurm/registry_test.sh tests/slurm/image_spread_test.sh tests/slurm/squashfs_test.sh tests/slurm/cdi_test.sh tests/slurm/slurm_test.sh tests/slurm/train_test.sh tests/slurm/container_test.sh tests/slurm/cluster tests/slurm/network \
	tests/slurm/gpu_test.sh tests/slurm/frameworks_test.sh tests/slurm/cpu_alloc_test.sh tests/slurm/task_probe.py tests/slurm/gpu_oracle.py \
	tests/slurm/frameworks/ddp_train.py tests/slurm/frameworks/mpi_exchange.c \
	tests/slurm/harness.sh

# The Debian packages: built from a clone (or TRELLIS_DEBS_DIR), lintian, installed, the
# installed plugin under the test cluster, an upgrade over a site's trellis.toml, purged (root).
# Without TRELLIS_DEBS_DIR it builds the packages itself: with the notrainer profile about 4 minutes on 2 cores.
# (In TESTS from the top of Makefile.am, among the longest.)
EXTRA_DIST += tests/packaging/debian_test.sh

# The Slurm suites above against newer Slurms, each in a root of the Debian release that ships
# it (made once from the network by tests/debian/root, kept in /var/cache/trellis): trellis's
# packages built and installed and the suites run there, on this machine's cgroup v1. Slurm
# 24.11 (Debian 13) runs every suite, then the GPU matrix and the CPU allocation again in a qemu
# guest on cgroup v2; Slurm 26.05 (unstable) the GPU matrix, the CPU allocation and the plugin's
# own suite. Skip without root, debootstrap, or, for a root not yet made, the network. (They are
# in TESTS from the top of Makefile.am: the longest, they start first.)
EXTRA_DIST += tests/debian/slurm2411_test.sh tests/debian/slurm2605_test.sh tests/debian/slurm_release.sh \
	tests/debian/root tests/debian/root.sh \
	tests/debian/onednn_sigfpe/report.md tests/debian/onednn_sigfpe/reproducer.cpp \
	tests/debian/onednn_sigfpe/tiny_l1_cache.cpp

# InfiniBand verbs over soft-RoCE in a qemu VM (skips where qemu or the kernel are missing).
TESTS += tests/rdma/harness_test.sh tests/rdma/verbs_test.sh
EXTRA_DIST += tests/rdma/harness_test.sh tests/rdma/verbs_test.sh tests/rdma/vm tests/rdma/rxe_setup.sh tests/vm/qemu

# Slurm 24.11 on cgroup v2 in a qemu guest booting a Debian 13 root: the GPU matrix and the CPU
# allocation of tests/slurm. Run by tests/debian/slurm2411_test.sh, on its root and packages.
EXTRA_DIST += tests/cgroup2/slurm_v2_test.sh tests/cgroup2/vm

# What every source holds to (tests/sources_test.py says each rule), checked in a second; the
# C++ sources' format, with the clang-format version .clang-format names (a few seconds).
TESTS += tests/sources_test.py tests/format_test.sh
EXTRA_DIST += tests/sources_test.py tests/format_test.sh .clang-format

# The GPU machine's script (scripts/gpu-check): its command line and its no-GPU path, as root
# and as an unprivileged user, with a fake nvidia-smi.
# gpu_check_runner_test.py: the same script with its Runner replaced by the test's answers.
TESTS += tests/gpu/gpu_check_test.sh tests/gpu/gpu_check_runner_test.py
EXTRA_DIST += scripts/gpu-check tests/gpu/gpu_check_test.sh tests/gpu/gpu_check_runner_test.py
