# SPDX-License-Identifier: Apache-2.0
# libtrellis-topology: a convenience library linked into trellis-topo, the plugin, the agent
# and the trainer (built PIC so that the plugin can take it in).
noinst_LTLIBRARIES += topology/libtrellis-topology.la
topology_libtrellis_topology_la_SOURCES = \
	topology/assignment.cpp topology/assignment.hpp \
	topology/cpu_division.cpp topology/cpu_division.hpp \
	topology/cpu_set.cpp topology/cpu_set.hpp \
	topology/device_matrix.cpp topology/device_matrix.hpp \
	topology/discovery.cpp topology/discovery.hpp \
	topology/distance.cpp topology/distance.hpp \
	topology/environment.cpp topology/environment.hpp \
	topology/gpu_minors.cpp topology/gpu_minors.hpp \
	topology/hca_choice.cpp topology/hca_choice.hpp \
	topology/hca_sysfs.cpp topology/hca_sysfs.hpp \
	topology/node.cpp topology/node.hpp \
	topology/nvlink.cpp topology/nvlink.hpp \
	topology/pci.cpp topology/pci.hpp \
	topology/plan.hpp topology/planner.cpp \
	topology/plan_json.cpp topology/plan_json.hpp \
	topology/report.cpp topology/report.hpp \
	topology/text_table.cpp topology/text_table.hpp
topology_libtrellis_topology_la_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS) $(JSON_CFLAGS)
topology_libtrellis_topology_la_LIBADD = common/libtrellis-common.la $(HWLOC_LIBS)

bin_PROGRAMS += trellis-topo
trellis_topo_SOURCES = topology/trellis-topo.cpp
trellis_topo_CPPFLAGS = $(AM_CPPFLAGS) $(JSON_CFLAGS)
trellis_topo_LDADD = topology/libtrellis-topology.la

# Its tests: the units (Catch2), the checks over ../shared/fixtures/topology and
# trellis-topo from the outside; and the planner's benchmark (make perf).
unit_tests += \
	tests/unit/topology_test \
	tests/unit/live_node_test \
	tests/unit/shared_fixtures_test
TESTS += tests/topo_cli_test.sh
EXTRA_DIST += tests/topo_cli_test.sh tests/golden_subset.py tests/fixtures/topology

# The units in one binary; the live machine and ../shared's real machines apart, since
# either may skip.
tests_unit_topology_test_SOURCES = tests/unit/cpu_set_test.cpp tests/unit/assignment_test.cpp \
	tests/unit/distance_test.cpp tests/unit/discovery_test.cpp tests/unit/planner_test.cpp \
	tests/unit/environment_test.cpp
tests_unit_topology_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_topology_test_LDADD = $(UNIT_LDADD)
tests_unit_live_node_test_SOURCES = tests/unit/live_node_test.cpp
tests_unit_live_node_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_live_node_test_LDADD = $(UNIT_LDADD)
tests_unit_shared_fixtures_test_SOURCES = tests/unit/shared_fixtures_test.cpp
tests_unit_shared_fixtures_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_shared_fixtures_test_LDADD = topology/libtrellis-topology.la $(CATCH2_LIBS)


noinst_PROGRAMS += tests/perf/plan_bench
tests_perf_plan_bench_SOURCES = tests/perf/plan_bench.cpp
tests_perf_plan_bench_LDADD = topology/libtrellis-topology.la
