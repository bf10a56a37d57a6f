# SPDX-License-Identifier: Apache-2.0
# report: its Python modules, tests and files (added to the lists of studies/local.mk).
studies_python_reportdir = $(studies_pythondir)/report
dist_studies_python_report_DATA = \
	studies/trellis_studies/report/__init__.py \
	studies/trellis_studies/report/command.py \
	studies/trellis_studies/report/jsonl.py \
	studies/trellis_studies/report/runs.py \
	studies/trellis_studies/report/plotting.py \
	studies/trellis_studies/report/figure.py \
	studies/trellis_studies/report/runs_csv.py \
	studies/trellis_studies/report/html_page.py
studies_python_report_figuresdir = $(studies_python_reportdir)/figures
dist_studies_python_report_figures_DATA = \
	studies/trellis_studies/report/figures/__init__.py \
	studies/trellis_studies/report/figures/common.py \
	studies/trellis_studies/report/figures/scaling.py \
	studies/trellis_studies/report/figures/time_to_accuracy.py \
	studies/trellis_studies/report/figures/ps_vs_allreduce.py \
	studies/trellis_studies/report/figures/busbw.py \
	studies/trellis_studies/report/figures/memory.py \
	studies/trellis_studies/report/figures/comm_share.py
TESTS += studies/tests/report_test.sh
EXTRA_DIST += studies/tests/report_test.sh studies/tests/report_test.py
