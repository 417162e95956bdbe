# SPDX-License-Identifier: GPL-2.0
#
# icfab top-level build.
#
#   make deps     install the Debian packages the project needs (idempotent)
#   make          build the module for the running kernel (when its headers
#                 are installed) and every installed test kernel, and all
#                 userspace; KVER=<kver> builds the module for one kernel
#   make modules  the module only, for the running kernel (or KVER)
#   make check    build, the module's W=1/sparse check, the host tests and
#                 the VM selftests on every test kernel, "N passed, N failed"
#   make demo     boot the test VM, load the module, show the fabric
#   make install  install everything (DESTDIR, PREFIX, LIBDIR); uninstall
#   make deb      Debian packages into build/deb/ (debian/)
#
# The kernels are found by tools/kvers when a recipe runs, never when make
# starts: `make demo` runs `make deps` first, which may install them.

TOP := $(CURDIR)
BUILD := $(TOP)/build

# KVER picks one kernel, by full version or by prefix (KVER=6.1,
# KVER=6.12, KVER=$$(uname -r)).
KVER ?=

DEB_PACKAGES := build-essential pkg-config kmod cpio xz-utils python3 \
	linux-image-cloud-amd64 linux-headers-cloud-amd64 \
	linux-image-6.12-cloud-amd64 linux-headers-6.12-cloud-amd64 \
	qemu-system-x86 qemu-system-common busybox-static \
	libnl-3-dev libnl-genl-3-dev liburing-dev libbpf-dev bpftool \
	clang llvm sparse linux-source-6.1 libyaml-dev \
	python3-numpy python3-matplotlib python3-torch

CC ?= gcc
WARN := -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes
USER_CFLAGS := -O2 -g -std=gnu11 $(WARN) -I$(TOP)/uapi $(CFLAGS)

export TOP BUILD CC USER_CFLAGS

.PHONY: all kmod modules modules_install kmod-check user deps check demo \
	clean print-kvers

all: kmod user

# The module is built out of tree from a per-kernel mirror of symlinks, so
# that objects for 6.1 and 6.12 never share a directory. A user's build is
# Kbuild's plain one; `make kmod-check` (part of `make check`) builds the
# test kernels again, apart, with W=1 and sparse (C=1), and any warning
# from either fails it.
KMOD_SOURCES := Kbuild $(wildcard kmod/*.[ch] kmod/model/*.[ch] uapi/linux/*.h)

# kmod_build MODE DIR FLAGS: build the module for every kernel that
# `tools/kvers MODE` names, under DIR/<kver>. A strict build whose log has
# a warning deletes its objects, so that the next run compiles (and warns)
# again instead of passing on what is left.
define kmod_build
	@kvers=$$(tools/kvers $(1) $(KVER)) || exit 1; \
	set -e; for kver in $$kvers; do \
		dir=$(2)/$$kver; \
		for f in $(KMOD_SOURCES); do \
			mkdir -p $$dir/$$(dirname $$f); ln -sfn $(TOP)/$$f $$dir/$$f; \
		done; \
		echo "  KMOD    $$kver$(if $(3), ($(3)))"; \
		$(MAKE) -s -C /lib/modules/$$kver/build M=$$dir $(3) \
			modules > $$dir/build.log 2>&1 || { cat $$dir/build.log >&2; exit 1; }; \
		if [ -n "$(3)" ] && grep -E 'warning:|error:' $$dir/build.log >&2; then \
			find $$dir -name '*.o' -type f -delete; \
			echo "kmod: $$kver: the build is not warning-free with $(3) (see above)" >&2; \
			exit 1; \
		fi; \
	done
endef

kmod:
	$(call kmod_build,build,$(BUILD)/kmod,)

modules:
	$(call kmod_build,running,$(BUILD)/kmod,)

kmod-check:
	$(call kmod_build,test,$(BUILD)/kmod-check,W=1 C=1)

user:
	@$(MAKE) -s -C lib all tests
	@$(MAKE) -s -C daemon
	@$(MAKE) -s -C tools/icfabctl
	@$(MAKE) -s -C tools/a2a
	@$(MAKE) -s -C tools/icfab-contention
	@$(MAKE) -s -C selftests/icfab
	@$(MAKE) -s -C tools/bench
	@$(MAKE) -s -C kmod/model/tests
	@$(MAKE) -s -C libfabricdev

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
			grep -q '^install ok installed$$' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; exit 0; fi; \
	echo "deps: installing" $$missing; \
	apt-get update -q && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends $$missing

# tools/check builds first and counts the build as a test, so that the
# summary line is printed even when the build fails.
check: deps
	@tools/check

# The test kernels (for the VM), one line; KVER narrows them.
print-kvers:
	@echo $$(tools/kvers test $(KVER))

demo: deps
	@$(MAKE) -s all
	@tools/demo

clean:
	rm -rf $(BUILD)
