# SPDX-License-Identifier: Apache-2.0
# campaign: its Python modules, tests and files (added to the lists of studies/local.mk).
studies_python_campaigndir = $(studies_pythondir)/campaign
dist_studies_python_campaign_DATA = studies/trellis_studies/campaign/__init__.py \
	studies/trellis_studies/campaign/builtin.py studies/trellis_studies/campaign/command.py \
	studies/trellis_studies/campaign/decide.py studies/trellis_studies/campaign/folder.py \
	studies/trellis_studies/campaign/runkey.py studies/trellis_studies/campaign/script.py \
	studies/trellis_studies/campaign/settings.py studies/trellis_studies/campaign/slurm.py \
	studies/trellis_studies/campaign/study.py
# The built-in studies: under docdir for people to read, and under pkgdatadir where
# trellis-campaign finds them by name (two folders above its installed package).
campaign_studies = studies/examples/scaling.toml studies/examples/ps-vs-allreduce.toml \
	studies/examples/network.toml studies/examples/container.toml studies/examples/models.toml \
	studies/examples/time-to-accuracy.toml
dist_studies_examples_DATA += $(campaign_studies)
studies_builtindir = $(pkgdatadir)/studies
studies_builtin_DATA = $(campaign_studies)
TESTS += studies/tests/campaign_test.py
EXTRA_DIST += studies/tests/campaign_test.py
