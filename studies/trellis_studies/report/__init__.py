# SPDX-License-Identifier: Apache-2.0
"""trellis-report: reads what trellis-train, trellis-bench and trellis-campaign left and writes
the figures, their tables, runs.csv and an HTML page that shows them."""
