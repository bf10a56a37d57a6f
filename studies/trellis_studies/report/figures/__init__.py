# SPDX-License-Identifier: Apache-2.0
"""The report's figures, one module each; every module has build(runs) -> Figure | Skipped."""
from . import busbw, comm_share, memory, ps_vs_allreduce, scaling, time_to_accuracy

ALL = [scaling, time_to_accuracy, ps_vs_allreduce, busbw, memory, comm_share]
