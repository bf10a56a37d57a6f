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
