# SPDX-License-Identifier: GPL-2.0
#
# icfab top-level build.
#
#   make deps     install the Debian packages the project needs (idempotent)
#   make          build the module for every installed test kernel, and all
#                 userspace; KVER=<kver> builds the module for one kernel
#   make check    build, run the host tests and the VM selftests on every
#                 test kernel, print "N passed, N failed"
#   make demo     boot the test VM, load the module, show the fabric

TOP := $(CURDIR)
BUILD := $(TOP)/build

# Test kernels: Debian's cloud flavour, 6.1 and 6.12, with headers.
# KVER picks one, by full version or by prefix (KVER=6.1, KVER=6.12).
KVER_GLOB := $(if $(KVER),$(KVER) $(KVER).*-cloud-amd64,*-cloud-amd64)
KVERS ?= $(patsubst /lib/modules/%/build,%,\
	$(wildcard $(patsubst %,/lib/modules/%/build,$(KVER_GLOB))))

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

export TOP BUILD CC USER_CFLAGS KVERS

.PHONY: all kmod user deps check demo clean print-kvers

all: kmod user

# The module is built out of tree from a per-kernel mirror of symlinks, so
# that objects for 6.1 and 6.12 never share a directory. W=1 always; sparse
# (C=1) too, and any warning from either fails the build.
KMOD_SOURCES := Kbuild $(wildcard kmod/*.[ch] kmod/model/*.[ch] uapi/linux/*.h)

kmod:
	@test -n "$(KVERS)" || { echo "no test kernel headers found: run 'make deps'" >&2; exit 1; }
	@set -e; for kver in $(KVERS); do \
		dir=$(BUILD)/kmod/$$kver; \
		for f in $(KMOD_SOURCES); do \
			mkdir -p $$dir/$$(dirname $$f); ln -sfn $(TOP)/$$f $$dir/$$f; \
		done; \
		echo "  KMOD    $$kver"; \
		$(MAKE) -s -C /lib/modules/$$kver/build M=$$dir W=1 C=1 \
			modules > $$dir/build.log 2>&1 || { cat $$dir/build.log >&2; exit 1; }; \
		if grep -E 'warning:|error:' $$dir/build.log >&2; then \
			echo "kmod: $$kver: the build is not warning-free (see above)" >&2; exit 1; \
		fi; \
	done

user:
	@$(MAKE) -s -C daemon all tests
	@$(MAKE) -s -C tools/icfabctl
	@$(MAKE) -s -C tools/a2a
	@$(MAKE) -s -C tools/icfab-contention
	@$(MAKE) -s -C selftests/icfab
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

print-kvers:
	@echo $(KVERS)

demo: deps
	@$(MAKE) -s all
	@tools/demo

clean:
	rm -rf $(BUILD)
