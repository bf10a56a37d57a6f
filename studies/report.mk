# report: its Python modules, tests and files (added to the lists of studies/local.mk).
