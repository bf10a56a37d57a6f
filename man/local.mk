dist_man_MANS += man/trellis.7 man/trellis-topo.1 man/spank_trellis.8 man/trellis.toml.5 man/trellis-train.1 man/trellis-bench.1 \
	man/trellis-agent.8
