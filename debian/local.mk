# SPDX-License-Identifier: Apache-2.0
# The Debian packaging (dpkg-buildpackage -b; tests/packaging/debian_test.sh builds and tests it).
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules debian/source/format \
	debian/not-installed debian/local.mk \
	debian/slurm-spank-trellis.install debian/slurm-spank-trellis.README.Debian \
	debian/trellis-agent.install debian/trellis-agent.postinst debian/trellis-agent.postrm debian/trellis-agent.lintian-overrides debian/trellis-common.install debian/trellis-cuda.install \
	debian/trellis-cuda.README.Debian debian/trellis-cuda.lintian-overrides debian/trellis-tools.install debian/trellis-train.install \
	debian/trellis-studies.install
