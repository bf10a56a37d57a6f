# SPDX-License-Identifier: Apache-2.0
"""The scaling predictor (`trellis-report predict`): images/sec and scaling efficiency for N
nodes x G ranks from one rank's measured step, the model's gradient size, the network that
trellis-bench measured and the overlap the trainer measured."""
