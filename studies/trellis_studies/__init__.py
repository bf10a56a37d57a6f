# SPDX-License-Identifier: Apache-2.0
"""trellis's studies: the campaign that runs them, the report that draws them, the predictor."""
