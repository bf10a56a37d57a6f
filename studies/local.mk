# SPDX-License-Identifier: Apache-2.0
# The studies: trellis-campaign writes and submits a study's runs to Slurm, trellis-report
# reads what the runs left and draws the figures (Python 3 with Debian's python3-matplotlib),
# and `trellis-report predict` is the scaling predictor. The package is installed under
# pkgdatadir; both commands are made from studies/command.in with that folder written in. In
# the build tree the package is linked beside them, so that they run from there as they are.
studies_pythondir = $(pkgdatadir)/python/trellis_studies
dist_studies_python_DATA = studies/trellis_studies/__init__.py studies/trellis_studies/cli.py
# The seeds' studies as campaign files (trellis-campaign's built-in study names).
studies_examplesdir = $(docdir)/studies
dist_studies_examples_DATA =
studies_commands = studies/trellis-report studies/trellis-campaign
bin_SCRIPTS = $(studies_commands)
CLEANFILES += $(studies_commands)
# The README's figure, from the demo's campaign.
EXTRA_DIST += studies/command.in studies/demo-scaling.png

$(studies_commands): %: studies/command.in Makefile
	$(AM_V_GEN)$(MKDIR_P) studies && command='$(@F)' && \
	sed -e "s|@command[@]|$$command|g" -e "s|@package[@]|$${command#trellis-}|g" \
		-e 's|@studies_python[@]|$(pkgdatadir)/python|g' '$(srcdir)/studies/command.in' >$@.tmp && \
	chmod +x $@.tmp && mv $@.tmp $@ && \
	{ test -e studies/trellis_studies || ln -s '$(abs_top_srcdir)/studies/trellis_studies' studies/trellis_studies; }

# Only the link a build tree made; in a source-tree build the folder itself is there.
clean-local:
	test ! -L studies/trellis_studies || rm -f studies/trellis_studies

include studies/report.mk
include studies/campaign.mk
include studies/predict.mk
