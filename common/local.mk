# SPDX-License-Identifier: Apache-2.0
# libtrellis-common: the error hierarchy and its exit statuses, the command-line toolkit, the
# environment variables' table and small helpers (host and node names). It depends on nothing
# of trellis; every other library and program may use it.
noinst_LTLIBRARIES += common/libtrellis-common.la
common_libtrellis_common_la_SOURCES = \
	common/cli.cpp common/cli.hpp \
	common/environment.cpp common/environment.hpp \
	common/error.cpp common/error.hpp \
	common/host.cpp common/host.hpp \
	common/log_file.cpp common/log_file.hpp \
	common/task_binding.cpp common/task_binding.hpp \
	common/spelling.cpp common/spelling.hpp \
	common/step_secret.cpp common/step_secret.hpp

unit_tests += common/tests/common_test
common_tests_common_test_SOURCES = common/tests/common_test.cpp
common_tests_common_test_CPPFLAGS = $(UNIT_CPPFLAGS)
common_tests_common_test_LDADD = tests/unit/libcatch-main.la common/libtrellis-common.la

unit_tests += common/tests/environment_test
common_tests_environment_test_SOURCES = common/tests/environment_test.cpp
common_tests_environment_test_CPPFLAGS = $(UNIT_CPPFLAGS)
common_tests_environment_test_LDADD = tests/unit/libcatch-main.la common/libtrellis-common.la

unit_tests += common/tests/spelling_test
common_tests_spelling_test_SOURCES = common/tests/spelling_test.cpp
common_tests_spelling_test_CPPFLAGS = $(UNIT_CPPFLAGS)
common_tests_spelling_test_LDADD = tests/unit/libcatch-main.la common/libtrellis-common.la

unit_tests += common/tests/task_binding_test
common_tests_task_binding_test_SOURCES = common/tests/task_binding_test.cpp
common_tests_task_binding_test_CPPFLAGS = $(UNIT_CPPFLAGS)
common_tests_task_binding_test_LDADD = tests/unit/libcatch-main.la common/libtrellis-common.la

unit_tests += common/tests/log_file_test
common_tests_log_file_test_SOURCES = common/tests/log_file_test.cpp
common_tests_log_file_test_CPPFLAGS = $(UNIT_CPPFLAGS)
common_tests_log_file_test_LDADD = tests/unit/libcatch-main.la common/libtrellis-common.la
