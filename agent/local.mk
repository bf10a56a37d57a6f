# SPDX-License-Identifier: Apache-2.0
# The agent's library (the step binding core, containers, health), shared by
# trellis-agent, the plugin and the unit tests. No libslurm here: slurmstepd, which loads the plugin, has its
# own copy of Slurm's symbols.
noinst_LTLIBRARIES += agent/libtrellis-agent.la
agent_libtrellis_agent_la_SOURCES = \
	agent/binding/binding_set.cpp agent/binding/binding_set.hpp \
	agent/binding/node_paths.cpp agent/binding/node_paths.hpp \
	agent/binding/step_plan.cpp agent/binding/step_plan.hpp \
	agent/binding/wireup.cpp agent/binding/wireup.hpp \
	agent/command.cpp agent/command.hpp \
	agent/container/cdi/apply.cpp agent/container/cdi/apply.hpp \
	agent/container/cdi/hooks.cpp agent/container/cdi/hooks.hpp \
	agent/container/cdi/resolved_edits.hpp \
	agent/container/cdi/selection.cpp agent/container/cdi/selection.hpp \
	agent/container/cdi/spec.hpp \
	agent/container/cdi/spec_folders.cpp agent/container/cdi/spec_folders.hpp \
	agent/container/cdi/spec_parser.cpp agent/container/cdi/spec_parser.hpp \
	agent/container/cdi/spec_version.cpp agent/container/cdi/spec_version.hpp \
	agent/container/cdi/step_edits.cpp agent/container/cdi/step_edits.hpp \
	agent/container/cdi/yaml_tree.cpp agent/container/cdi/yaml_tree.hpp \
	agent/container/container_spec.hpp \
	agent/container/devices.cpp agent/container/devices.hpp \
	agent/container/held_container.cpp agent/container/held_container.hpp \
	agent/container/ld_cache.cpp agent/container/ld_cache.hpp \
	agent/container/mount_spec.cpp agent/container/mount_spec.hpp \
	agent/container/namespaces.cpp agent/container/namespaces.hpp \
	agent/container/oci_container.cpp agent/container/oci_container.hpp \
	agent/container/rootfs.cpp agent/container/rootfs.hpp \
	agent/container/sif_container.cpp agent/container/sif_container.hpp \
	agent/container/squashfs_root.cpp agent/container/squashfs_root.hpp \
	agent/container/step_container.cpp agent/container/step_container.hpp \
	agent/files.cpp agent/files.hpp \
	agent/health/node_check.cpp agent/health/node_check.hpp \
	agent/image/broadcast.cpp agent/image/broadcast.hpp \
	agent/image/cache.cpp agent/image/cache.hpp \
	agent/image/cache_entry.cpp agent/image/cache_entry.hpp \
	agent/image/elapsed.hpp \
	agent/image/import.cpp agent/image/import.hpp \
	agent/image/import_tool.cpp agent/image/import_tool.hpp \
	agent/image/policy.cpp agent/image/policy.hpp \
	agent/image/reference.cpp agent/image/reference.hpp \
	agent/image/registry_digest.cpp agent/image/registry_digest.hpp \
	agent/image/settings.cpp agent/image/settings.hpp \
	agent/image/skopeo.cpp agent/image/skopeo.hpp
agent_libtrellis_agent_la_CPPFLAGS = $(AM_CPPFLAGS) $(TOMLPP_CFLAGS) $(JSON_CFLAGS) $(YAML_CFLAGS) $(SLURM_CPPFLAGS) \
	-DTRELLIS_CONFIG_PATH='"$(sysconfdir)/trellis/trellis.toml"' \
	-DTRELLIS_PAUSE_PATH='"$(pkglibexecdir)/trellis-pause"'
agent_libtrellis_agent_la_LIBADD = config/libtrellis-config.la slurm/libtrellis-slurm-gres.la topology/libtrellis-topology.la \
	$(YAML_LIBS)

# Launching ranks (libslurm for the step's node list, kept out of the plugin).
noinst_LTLIBRARIES += agent/libtrellis-agent-launch.la
agent_libtrellis_agent_launch_la_SOURCES = \
	agent/launch/launch_command.cpp agent/launch/launch_command.hpp \
	agent/launch/launch_options.cpp agent/launch/launch_options.hpp \
	agent/launch/plugin_config.cpp agent/launch/plugin_config.hpp \
	agent/launch/rank_launcher.cpp agent/launch/rank_launcher.hpp
agent_libtrellis_agent_launch_la_CPPFLAGS = $(agent_libtrellis_agent_la_CPPFLAGS)
agent_libtrellis_agent_launch_la_LIBADD = slurm/libtrellis-slurm-nodes.la agent/libtrellis-agent.la

bin_PROGRAMS += trellis-agent
trellis_agent_SOURCES = agent/trellis-agent.cpp
trellis_agent_CPPFLAGS = $(agent_libtrellis_agent_la_CPPFLAGS)
trellis_agent_LDADD = agent/libtrellis-agent-launch.la

# The process a .sif container is entered through: static, since it runs inside the image.
pkglibexec_PROGRAMS = trellis-pause
trellis_pause_SOURCES = agent/container/pause.cpp
trellis_pause_LDFLAGS = $(AM_LDFLAGS) -all-static

# Its tests: its pure parts, then launching ranks natively and in containers.
unit_tests += tests/unit/agent_test
tests_unit_agent_test_SOURCES = tests/unit/agent_test.cpp tests/unit/image_reference_test.cpp \
	tests/unit/image_policy_test.cpp tests/unit/registry_digest_test.cpp tests/unit/image_cache_test.cpp \
	tests/unit/image_settings_test.cpp
tests_unit_agent_test_CPPFLAGS = $(UNIT_CPPFLAGS) $(TOMLPP_CFLAGS)
tests_unit_agent_test_LDADD = tests/unit/libcatch-main.la agent/libtrellis-agent-launch.la
unit_tests += tests/unit/cdi_test
tests_unit_cdi_test_SOURCES = tests/unit/cdi_test.cpp
tests_unit_cdi_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_cdi_test_LDADD = tests/unit/libcatch-main.la agent/libtrellis-agent.la $(SLURM_LIBS)
EXTRA_DIST += tests/fixtures/cdi/nvidia-ctk.yaml tests/fixtures/cdi/accel.json
unit_tests += tests/unit/binding_set_test
tests_unit_binding_set_test_SOURCES = tests/unit/binding_set_test.cpp
tests_unit_binding_set_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_binding_set_test_LDADD = tests/unit/libcatch-main.la agent/libtrellis-agent.la $(SLURM_LIBS)
unit_tests += tests/unit/wireup_test
tests_unit_wireup_test_SOURCES = tests/unit/wireup_test.cpp
tests_unit_wireup_test_CPPFLAGS = $(UNIT_CPPFLAGS) $(TOMLPP_CFLAGS)
tests_unit_wireup_test_LDADD = tests/unit/libcatch-main.la agent/libtrellis-agent-launch.la
# Each concept of the agent written once (a lint over the sources).
TESTS += tests/one_copy_test.sh
EXTRA_DIST += tests/one_copy_test.sh
TESTS += tests/container/launch_test.sh tests/container/import_test.sh tests/container/cdi_apply_test.sh \
	tests/container/digest_test.sh tests/container/squashfs_test.sh tests/container/user_image_test.sh \
	tests/container/skopeo_words_test.sh
check_PROGRAMS += tests/container/cdi_apply_probe tests/container/skopeo_words
tests_container_skopeo_words_SOURCES = tests/container/skopeo_words.cpp
tests_container_skopeo_words_CPPFLAGS = $(agent_libtrellis_agent_la_CPPFLAGS)
tests_container_skopeo_words_LDADD = agent/libtrellis-agent.la
tests_container_cdi_apply_probe_SOURCES = tests/container/cdi_apply_probe.cpp
tests_container_cdi_apply_probe_CPPFLAGS = $(AM_CPPFLAGS)
tests_container_cdi_apply_probe_LDADD = agent/libtrellis-agent.la
EXTRA_DIST += tests/container/launch_test.sh tests/container/apptainer-test-double tests/container/apptainer_double_left.sh \
	tests/container/make_bundle \
	tests/container/import_test.sh tests/container/registry.sh tests/container/cdi_apply_test.sh \
	tests/container/digest_test.sh tests/container/squashfs_test.sh tests/container/user_image_test.sh \
	tests/container/skopeo_words_test.sh
