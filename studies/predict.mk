# SPDX-License-Identifier: Apache-2.0
# predict: its Python modules, tests and files (added to the lists of studies/local.mk).
studies_python_predictdir = $(studies_pythondir)/predict
dist_studies_python_predict_DATA = \
	studies/trellis_studies/predict/__init__.py \
	studies/trellis_studies/predict/cluster.py \
	studies/trellis_studies/predict/command.py \
	studies/trellis_studies/predict/connection_setup.py \
	studies/trellis_studies/predict/image_spread.py \
	studies/trellis_studies/predict/jsonlines.py \
	studies/trellis_studies/predict/measured.py \
	studies/trellis_studies/predict/network.py \
	studies/trellis_studies/predict/schedules.py \
	studies/trellis_studies/predict/step_model.py \
	studies/trellis_studies/predict/tables.py
# The predictor on synthetic timings with answers worked out by hand, and its worked example
# beside the seeds' figures.
TESTS += studies/tests/predict_test.py
EXTRA_DIST += studies/tests/predict_test.py
# The PREDICT section of trellis-report(1), in roff, which trellis-report.1 takes in.
