# The studies (issue 33): trellis-campaign writes and submits a study's runs to Slurm,
# trellis-report reads what the runs left and draws the figures (Python 3 with Debian's
# python3-matplotlib), and `trellis-report predict` is the scaling predictor. The Python
# package is installed under pkgdatadir; the two commands are made from their .in files with
# that folder written in, and TRELLIS_STUDIES_PYTHON overrides it (the tests point it at the
# source tree).
studies_pythondir = $(pkgdatadir)/python/trellis_studies
dist_studies_python_DATA = studies/trellis_studies/__init__.py
# The seeds' studies as campaign files (trellis-campaign's built-in study names).
studies_examplesdir = $(docdir)/studies
dist_studies_examples_DATA =
studies_commands = studies/trellis-report studies/trellis-campaign
bin_SCRIPTS = $(studies_commands)
CLEANFILES += $(studies_commands)
# The README's figure, from the demo's campaign.
EXTRA_DIST += studies/trellis-report.in studies/trellis-campaign.in studies/demo-scaling.png

$(studies_commands): %: %.in Makefile
	$(AM_V_GEN)$(MKDIR_P) studies && \
	sed -e 's|@studies_python[@]|$(pkgdatadir)/python|g' '$(srcdir)/$@.in' >$@.tmp && \
	chmod +x $@.tmp && mv $@.tmp $@

include studies/report.mk
include studies/campaign.mk
include studies/predict.mk
