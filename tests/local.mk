# Unit tests (Catch2, one binary per unit), the trellis-topo command-line tests and the
# checks over ../shared/fixtures/topology. Binaries exit 77 ("skipped") when what they need
# is absent, so that a skip is never counted as a pass.
check_LTLIBRARIES += tests/unit/libcatch-main.la
tests_unit_libcatch_main_la_SOURCES = tests/unit/catch_main.cpp tests/unit/fixtures.hpp
tests_unit_libcatch_main_la_CPPFLAGS = $(AM_CPPFLAGS) $(CATCH2_CFLAGS)

UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CATCH2_CFLAGS) $(JSON_CFLAGS) \
	-DTRELLIS_SOURCE_DIR='"$(abs_top_srcdir)"'
UNIT_LDADD = tests/unit/libcatch-main.la topology/libtrellis-topology.la

unit_tests += \
	tests/unit/cpu_set_test \
	tests/unit/assignment_test \
	tests/unit/distance_test \
	tests/unit/discovery_test \
	tests/unit/planner_test \
	tests/unit/environment_test \
	tests/unit/live_node_test \
	tests/unit/shared_fixtures_test
check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests) tests/topo_cli_test.sh
EXTRA_DIST += tests/topo_cli_test.sh tests/fixtures/topology

tests_unit_cpu_set_test_SOURCES = tests/unit/cpu_set_test.cpp
tests_unit_cpu_set_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_cpu_set_test_LDADD = $(UNIT_LDADD)
tests_unit_assignment_test_SOURCES = tests/unit/assignment_test.cpp
tests_unit_assignment_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_assignment_test_LDADD = $(UNIT_LDADD)
tests_unit_distance_test_SOURCES = tests/unit/distance_test.cpp
tests_unit_distance_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_distance_test_LDADD = $(UNIT_LDADD)
tests_unit_discovery_test_SOURCES = tests/unit/discovery_test.cpp
tests_unit_discovery_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_discovery_test_LDADD = $(UNIT_LDADD)
tests_unit_planner_test_SOURCES = tests/unit/planner_test.cpp
tests_unit_planner_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_planner_test_LDADD = $(UNIT_LDADD)
tests_unit_environment_test_SOURCES = tests/unit/environment_test.cpp
tests_unit_environment_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_environment_test_LDADD = $(UNIT_LDADD)
tests_unit_live_node_test_SOURCES = tests/unit/live_node_test.cpp
tests_unit_live_node_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_live_node_test_LDADD = $(UNIT_LDADD)
tests_unit_shared_fixtures_test_SOURCES = tests/unit/shared_fixtures_test.cpp
tests_unit_shared_fixtures_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_shared_fixtures_test_LDADD = topology/libtrellis-topology.la

AM_TESTS_ENVIRONMENT = \
	TRELLIS_TOPO='$(abs_top_builddir)/trellis-topo'; export TRELLIS_TOPO; \
	TRELLIS_BUILD='$(abs_top_builddir)'; export TRELLIS_BUILD; \
	TRELLIS_CUDA_MODULE='$(abs_top_builddir)/.libs/trellis-cuda.so'; export TRELLIS_CUDA_MODULE; \
	TRELLIS_FIXTURES='$(abs_top_srcdir)/tests/fixtures'; export TRELLIS_FIXTURES; \
	PYTHON3='$(PYTHON3)'; export PYTHON3;

# The performance benchmarks print figures and ratios; `make perf` runs them.
noinst_PROGRAMS = tests/perf/plan_bench
tests_perf_plan_bench_SOURCES = tests/perf/plan_bench.cpp
tests_perf_plan_bench_LDADD = topology/libtrellis-topology.la
EXTRA_DIST += tests/perf/run tests/perf/slurm_launch tests/perf/fuzz/run tests/perf/fuzz/parsers_fuzz.cpp \
	tests/perf/trainer_vs_pytorch tests/perf/pytorch_resnet.py tests/perf/container_vs_native \
	tests/perf/allreduce_vs_peers tests/perf/mpi_allreduce.c tests/perf/gloo_allreduce.py \
	tests/perf/training_scaling tests/perf/verbs_vs_ib_write_bw \
	tests/perf/gpu_vs_pytorch tests/perf/pytorch_resnet_gpu.py

perf: all
	$(srcdir)/tests/perf/run '$(abs_top_builddir)' '$(abs_top_srcdir)'
.PHONY: perf

# The plugin's configuration and option parsing.
unit_tests += tests/unit/config_test tests/unit/spank_options_test
tests_unit_config_test_SOURCES = tests/unit/config_test.cpp
tests_unit_config_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_config_test_LDADD = $(UNIT_LDADD) spank/libtrellis-spank-config.la
tests_unit_spank_options_test_SOURCES = tests/unit/spank_options_test.cpp
tests_unit_spank_options_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_spank_options_test_LDADD = $(UNIT_LDADD) spank/libtrellis-spank-config.la

# The plugin under a real two-node Slurm cluster (skips without root, Slurm or munge).
check_PROGRAMS += tests/slurm/pmix_exchange
tests_slurm_pmix_exchange_SOURCES = tests/slurm/pmix_exchange.cpp
tests_slurm_pmix_exchange_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CFLAGS)
tests_slurm_pmix_exchange_LDADD = $(PMIX_LIBS)
TESTS += tests/slurm/slurm_test.sh tests/slurm/train_test.sh tests/slurm/container_test.sh \
	tests/slurm/gpu_test.sh tests/slurm/frameworks_test.sh tests/slurm/cpu_alloc_test.sh

# The agent: its pure parts, then launching ranks natively and in containers.
unit_tests += tests/unit/agent_test
tests_unit_agent_test_SOURCES = tests/unit/agent_test.cpp
tests_unit_agent_test_CPPFLAGS = $(UNIT_CPPFLAGS) $(TOMLPP_CFLAGS)
tests_unit_agent_test_LDADD = tests/unit/libcatch-main.la agent/libtrellis-agent-launch.la
unit_tests += tests/unit/wireup_test tests/unit/slurm_gpus_test
tests_unit_wireup_test_SOURCES = tests/unit/wireup_test.cpp
tests_unit_wireup_test_CPPFLAGS = $(UNIT_CPPFLAGS) $(TOMLPP_CFLAGS)
tests_unit_wireup_test_LDADD = tests/unit/libcatch-main.la agent/libtrellis-agent-launch.la
tests_unit_slurm_gpus_test_SOURCES = tests/unit/slurm_gpus_test.cpp
tests_unit_slurm_gpus_test_CPPFLAGS = $(UNIT_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_unit_slurm_gpus_test_LDADD = tests/unit/libcatch-main.la slurm/libtrellis-slurm-gres.la \
	topology/libtrellis-topology.la $(SLURM_LIBS)
TESTS += tests/container/launch_test.sh tests/plugin_exports_test.sh
EXTRA_DIST += tests/container/launch_test.sh tests/container/apptainer-test-double tests/plugin_exports_test.sh
EXTRA_DIST += tests/slurm/slurm_test.sh tests/slurm/train_test.sh tests/slurm/container_test.sh tests/slurm/cluster \
	tests/slurm/gpu_test.sh tests/slurm/frameworks_test.sh tests/slurm/cpu_alloc_test.sh tests/slurm/task_probe.py tests/slurm/gpu_oracle.py \
	tests/slurm/frameworks/ddp_train.py tests/slurm/frameworks/mpi_exchange.c \
	tests/slurm/harness.sh \
	tests/container/make_bundle

# The trainer's units: layer gradients, loss, optimizers, models.
NN_TEST_LDADD = tests/unit/libcatch-main.la $(NN_LIBS)
unit_tests += tests/unit/layers_gradient_test
tests_unit_layers_gradient_test_SOURCES = tests/unit/layers_gradient_test.cpp \
	tests/unit/gradient_check.cpp tests/unit/gradient_check.hpp
tests_unit_layers_gradient_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_layers_gradient_test_LDADD = $(NN_TEST_LDADD)

unit_tests += tests/unit/loss_test tests/unit/optimizer_test tests/unit/schedule_test \
	tests/unit/train_options_test tests/unit/checkpoint_test
tests_unit_loss_test_SOURCES = tests/unit/loss_test.cpp
tests_unit_loss_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_loss_test_LDADD = $(NN_TEST_LDADD)
tests_unit_optimizer_test_SOURCES = tests/unit/optimizer_test.cpp
tests_unit_optimizer_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_optimizer_test_LDADD = $(NN_TEST_LDADD)
tests_unit_schedule_test_SOURCES = tests/unit/schedule_test.cpp
tests_unit_schedule_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_schedule_test_LDADD = $(NN_TEST_LDADD)
tests_unit_train_options_test_SOURCES = tests/unit/train_options_test.cpp
tests_unit_train_options_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_train_options_test_LDADD = tests/unit/libcatch-main.la $(TRAIN_LIBS)
tests_unit_checkpoint_test_SOURCES = tests/unit/checkpoint_test.cpp
tests_unit_checkpoint_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_checkpoint_test_LDADD = tests/unit/libcatch-main.la $(CHECKPOINT_LIBS)

# trellis-train end to end: learning, resuming, bad data, the command line.
train_tests = tests/train/learns_test.sh tests/train/resume_test.sh tests/train/data_errors_test.sh \
	tests/train/cli_test.sh tests/train/allreduce_test.sh tests/train/ps_test.sh \
	tests/train/failures_test.sh tests/train/bench_test.sh
TESTS += $(train_tests)

# The CUDA backend against the CPU backend, and training on the GPU; both skip without a GPU.
check_PROGRAMS += tests/gpu/layers_test
tests_gpu_layers_test_SOURCES = tests/gpu/layers_test.cpp
tests_gpu_layers_test_LDADD = $(TRAIN_LIBS)
tests_gpu_layers_test_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
TESTS += tests/gpu/layers_test tests/gpu/learns_test.sh
EXTRA_DIST += tests/gpu/learns_test.sh
EXTRA_DIST += $(train_tests) tests/train/lib.sh tests/free_port.py

# The communication layer: ranks as threads over real TCP connections.
unit_tests += tests/unit/comm_test
tests_unit_comm_test_SOURCES = tests/unit/comm_test.cpp
tests_unit_comm_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_comm_test_LDADD = tests/unit/libcatch-main.la $(COMM_LIBS)

# InfiniBand verbs over soft-RoCE in a qemu VM (skips where qemu or the kernel are missing).
TESTS += tests/rdma/harness_test.sh tests/rdma/verbs_test.sh
EXTRA_DIST += tests/rdma/harness_test.sh tests/rdma/verbs_test.sh tests/rdma/vm tests/rdma/rxe_setup.sh
