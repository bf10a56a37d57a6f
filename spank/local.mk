# The pure parts of the plugin (configuration and option parsing), shared with the unit
# tests and the fuzz target.
noinst_LTLIBRARIES += spank/libtrellis-spank-config.la
spank_libtrellis_spank_config_la_SOURCES = \
	spank/options.cpp spank/options.hpp
spank_libtrellis_spank_config_la_CPPFLAGS = $(AM_CPPFLAGS) $(TOMLPP_CFLAGS)
spank_libtrellis_spank_config_la_LIBADD = agent/libtrellis-agent.la

# spank_trellis.so, loaded by srun, sbatch, salloc and slurmstepd. Slurm's own symbols
# (slurm_error, spank_*) come from the process that loads it, so libslurm is not linked.
slurm_plugin_LTLIBRARIES = spank/spank_trellis.la
slurm_plugindir = @slurm_plugindir@
spank_spank_trellis_la_SOURCES = \
	spank/configuration.cpp \
	spank/container.cpp \
	spank/job_info.cpp \
	spank/contexts.hpp \
	spank/option_callbacks.cpp \
	spank/plugin.cpp \
	spank/spank_api.hpp \
	spank/state.hpp \
	spank/task_init.cpp \
	spank/user_init.cpp
spank_spank_trellis_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) \
	-DTRELLIS_CONFIG_PATH='"$(sysconfdir)/trellis/trellis.toml"'
spank_spank_trellis_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/spank/exports.map
EXTRA_spank_spank_trellis_la_DEPENDENCIES = spank/exports.map
EXTRA_DIST += spank/exports.map
spank_spank_trellis_la_LIBADD = spank/libtrellis-spank-config.la

# Slurm loads the .so by name; the libtool archive beside it is of no use there.
install-data-hook:
	rm -f '$(DESTDIR)$(slurm_plugindir)/spank_trellis.la'
uninstall-hook:
	rm -f '$(DESTDIR)$(slurm_plugindir)/spank_trellis.so'

trellisconfdir = $(sysconfdir)/trellis
dist_trellisconf_DATA = etc/trellis.toml
plugstackexamplesdir = $(docdir)/examples/plugstack.conf.d
dist_plugstackexamples_DATA = etc/plugstack.conf.d/trellis.conf
