# SPDX-License-Identifier: Apache-2.0
# What Slurm gave a step, read from Slurm's own files and libslurm. (The folder's name does
# not shadow <slurm/spank.h> or <slurm/slurm.h>: it holds no file of those names.)
#
# libtrellis-slurm-gres: gres.conf, slurm.conf, cgroup.conf and plugstack.conf, the step's
# GPUs on the topology's terms, and how srun's options bind them to tasks. libslurm's host lists are called but not linked here:
# the plugin finds them in srun and slurmstepd; programs link $(SLURM_LIBS) (through
# libtrellis-slurm-nodes).
noinst_LTLIBRARIES += slurm/libtrellis-slurm-gres.la
slurm_libtrellis_slurm_gres_la_SOURCES = \
	slurm/slurm_config.cpp slurm/slurm_config.hpp \
	slurm/step_gpus.cpp slurm/step_gpus.hpp \
	slurm/gpu_binding.cpp slurm/gpu_binding.hpp
slurm_libtrellis_slurm_gres_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)

# The step's first node from a Slurm node list, with libslurm (not for the plugin).
noinst_LTLIBRARIES += slurm/libtrellis-slurm-nodes.la
slurm_libtrellis_slurm_nodes_la_SOURCES = slurm/node_list.cpp slurm/node_list.hpp
slurm_libtrellis_slurm_nodes_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
slurm_libtrellis_slurm_nodes_la_LIBADD = $(SLURM_LIBS)

# Its tests.
unit_tests += tests/unit/slurm_gpus_test
tests_unit_slurm_gpus_test_SOURCES = tests/unit/slurm_gpus_test.cpp
tests_unit_slurm_gpus_test_CPPFLAGS = $(UNIT_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_unit_slurm_gpus_test_LDADD = tests/unit/libcatch-main.la slurm/libtrellis-slurm-gres.la \
	topology/libtrellis-topology.la $(SLURM_LIBS)

unit_tests += tests/unit/slurm_gpu_binding_test
tests_unit_slurm_gpu_binding_test_SOURCES = tests/unit/slurm_gpu_binding_test.cpp
tests_unit_slurm_gpu_binding_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_slurm_gpu_binding_test_LDADD = tests/unit/libcatch-main.la slurm/libtrellis-slurm-gres.la \
	common/libtrellis-common.la
