# SPDX-License-Identifier: Apache-2.0
"""trellis-campaign: a study (a TOML file) expanded into runs, written as sbatch scripts in a
campaign folder, submitted to Slurm, resubmitted by the rules of each run's exit status."""
