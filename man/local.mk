# SPDX-License-Identifier: Apache-2.0
dist_man_MANS += man/trellis.7 man/trellis-topo.1 man/spank_trellis.8 man/trellis.toml.5 man/trellis-agent.8
# The studies' commands are Python: installed whether or not the trainer is built.
dist_man_MANS += man/trellis-report.1 man/trellis-campaign.1
if BUILD_TRAINER
dist_man_MANS += man/trellis-train.1 man/trellis-bench.1
else
EXTRA_DIST += man/trellis-train.1 man/trellis-bench.1
endif
