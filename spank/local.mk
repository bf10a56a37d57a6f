# SPDX-License-Identifier: Apache-2.0
# The pure part of the plugin, its option parsing (the configuration is config/), shared with
# the unit tests and the fuzz target.
noinst_LTLIBRARIES += spank/libtrellis-spank-options.la
spank_libtrellis_spank_options_la_SOURCES = \
	spank/options.cpp spank/options.hpp
spank_libtrellis_spank_options_la_CPPFLAGS = $(AM_CPPFLAGS) $(TOMLPP_CFLAGS)
spank_libtrellis_spank_options_la_LIBADD = agent/libtrellis-agent.la

# spank_trellis.so, loaded by srun, sbatch, salloc and slurmstepd. Slurm's own symbols
# (slurm_error, spank_*) come from the process that loads it, so libslurm is not linked.
slurm_plugin_LTLIBRARIES = spank/spank_trellis.la
slurm_plugindir = @slurm_plugindir@
spank_spank_trellis_la_SOURCES = \
	spank/configuration.cpp \
	spank/container.cpp \
	spank/job_info.cpp \
	spank/contexts.hpp \
	spank/image_broadcast.cpp \
	spank/option_callbacks.cpp \
	spank/plugin.cpp \
	spank/spank_api.hpp \
	spank/state.hpp \
	spank/step_secret.cpp \
	spank/task_init.cpp \
	spank/user_init.cpp
spank_spank_trellis_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) \
	-DTRELLIS_CONFIG_PATH='"$(sysconfdir)/trellis/trellis.toml"'
spank_spank_trellis_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/spank/exports.map
EXTRA_spank_spank_trellis_la_DEPENDENCIES = spank/exports.map
EXTRA_DIST += spank/exports.map
spank_spank_trellis_la_LIBADD = spank/libtrellis-spank-options.la

# Slurm loads the .so by name; the libtool archive beside it is of no use there.
install-data-hook:
	rm -f '$(DESTDIR)$(slurm_plugindir)/spank_trellis.la'
uninstall-hook:
	rm -f '$(DESTDIR)$(slurm_plugindir)/spank_trellis.so'

trellisconfdir = $(sysconfdir)/trellis
dist_trellisconf_DATA = etc/trellis.toml
# The plugstack line, naming where this build installs the plugin and its configuration.
plugstackexamplesdir = $(docdir)/examples/plugstack.conf.d
plugstackexamples_DATA = etc/plugstack.conf.d/trellis.conf
EXTRA_DIST += etc/plugstack.conf.d/trellis.conf.in
CLEANFILES += etc/plugstack.conf.d/trellis.conf
etc/plugstack.conf.d/trellis.conf: $(srcdir)/etc/plugstack.conf.d/trellis.conf.in Makefile
	$(AM_V_GEN)$(MKDIR_P) etc/plugstack.conf.d && \
	sed -e 's|@PLUGIN@|$(slurm_plugindir)/spank_trellis.so|' -e 's|@CONFIG@|$(sysconfdir)/trellis/trellis.toml|' \
		$(srcdir)/etc/plugstack.conf.d/trellis.conf.in >$@

# Its tests: the configuration and option parsing.
unit_tests += tests/unit/config_test tests/unit/spank_options_test
tests_unit_config_test_SOURCES = tests/unit/config_test.cpp
tests_unit_config_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_config_test_LDADD = $(UNIT_LDADD) spank/libtrellis-spank-options.la
tests_unit_spank_options_test_SOURCES = tests/unit/spank_options_test.cpp
tests_unit_spank_options_test_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_spank_options_test_LDADD = $(UNIT_LDADD) spank/libtrellis-spank-options.la
TESTS += tests/plugin_exports_test.sh
EXTRA_DIST += tests/plugin_exports_test.sh
