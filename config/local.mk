# SPDX-License-Identifier: Apache-2.0
# libtrellis-config: trellis.toml and the plugstack.conf arguments, read by the plugin and by
# trellis-agent alike (the binding defaults, the container policy, the framework wireup).
noinst_LTLIBRARIES += config/libtrellis-config.la
config_libtrellis_config_la_SOURCES = config/config.cpp config/config.hpp
config_libtrellis_config_la_CPPFLAGS = $(AM_CPPFLAGS) $(TOMLPP_CFLAGS) \
	-DTRELLIS_CONFIG_PATH='"$(sysconfdir)/trellis/trellis.toml"' \
	-DTRELLIS_AGENT_PATH='"$(bindir)/trellis-agent"'
config_libtrellis_config_la_LIBADD = $(TOMLPP_LIBS)
