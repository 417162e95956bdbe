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
#   make fuzz     build the libFuzzer harnesses (tools/fuzz) and run each
#                 for FUZZ_SECONDS (default 30), "N passed, N failed"
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
	clang libclang-rt-14-dev llvm sparse linux-source-6.1 libyaml-dev \
	python3-numpy python3-matplotlib python3-torch libtorch-dev pybind11-dev \
	mount

CC ?= gcc
WARN := -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes
USER_CFLAGS := -O2 -g -std=gnu11 $(WARN) -I$(TOP)/uapi $(CFLAGS)

export TOP BUILD CC USER_CFLAGS

.PHONY: all kmod modules modules_install kmod-check user deps check check-debug demo \
	clean print-kvers install install-kmod install-user install-dkms-src \
	uninstall install-root deb fuzz

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
		$(call kmod_one,/lib/modules/$$kver/build,$(2)/$$kver,$(3)); \
		if [ -n "$(3)" ] && grep -E 'warning:|error:' $$dir/build.log >&2; then \
			find $$dir -name '*.o' -type f -delete; \
			echo "kmod: $$kver: the build is not warning-free with $(3) (see above)" >&2; \
			exit 1; \
		fi; \
	done
endef

# kmod_one KDIR DIR FLAGS (shell text): the module for the kernel tree
# KDIR, in DIR, from its mirror of symlinks; the log in DIR/build.log.
define kmod_one
	dir=$(2); \
	for f in $(KMOD_SOURCES); do \
		mkdir -p $$dir/$$(dirname $$f); ln -sfn $(TOP)/$$f $$dir/$$f; \
	done; \
	echo "  KMOD    $$(basename $$dir)$(if $(3), ($(3)))"; \
	$(MAKE) -s -C $(1) M=$$dir $(3) \
		modules > $$dir/build.log 2>&1 || { cat $$dir/build.log >&2; exit 1; }
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
	@$(MAKE) -s -C libfabricdev/python

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
			grep -q '^install ok installed$$' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; exit 0; fi; \
	echo "deps: installing" $$missing; \
	apt-get update -q || exit 1; \
	unknown=$$(for p in $$missing; do \
		apt-cache policy $$p 2>/dev/null | grep -q 'Candidate: [0-9]' || \
			echo $$p; done); \
	if [ -n "$$unknown" ]; then \
		echo "deps: no apt source of this machine offers:" $$unknown >&2; \
		echo "deps: Debian 12 has them in bookworm, bookworm-updates and" \
			"bookworm-security (the 6.12 kernel); add those suites to" \
			"/etc/apt/sources.list(.d) and rerun" >&2; \
		exit 1; \
	fi; \
	DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends $$missing

# tools/check builds first and counts the build as a test, so that the
# summary line is printed even when the build fails.
check: deps
	@tools/check

# The VM selftests on a 6.1 debug kernel (KASAN, lockdep, atomic-sleep
# checks, UBSAN), built once from linux-source-6.1 under build/ by
# tools/vm/debug-kernel; any splat fails the VM's dmesg check. Not part
# of `make check`: the kernel alone takes tens of minutes on two cores.
# DEBUG_TESTS narrows the run list (docs/SECURITY.md, "The debug kernel").
DEBUG_KDIR := $(BUILD)/debug-kernel
DEBUG_DEPS := flex bison bc libelf-dev libssl-dev
DEBUG_TIMEOUT ?= 10800
check-debug: all
	@$(MAKE) -s deps DEB_PACKAGES="$(DEB_PACKAGES) $(DEBUG_DEPS)"
	@tools/vm/debug-kernel $(DEBUG_KDIR)
	@set -e; kver=$$(cat $(DEBUG_KDIR)/linux-source-6.1/include/config/kernel.release); \
		$(call kmod_one,$(DEBUG_KDIR)/linux-source-6.1,$(BUILD)/kmod/$$kver,)
	@tools/vm/run --kernel $(DEBUG_KDIR) -m 2G -t $(DEBUG_TIMEOUT) -- \
		build/selftests/icfab/run_tests.sh $(DEBUG_TESTS)

# libFuzzer harnesses, with clang (tools/fuzz/README.md).
FUZZ_SECONDS ?= 30
fuzz:
	@$(MAKE) -s -C tools/fuzz run FUZZ_SECONDS=$(FUZZ_SECONDS)

# The test kernels (for the VM), one line; KVER narrows them.
print-kvers:
	@echo $$(tools/kvers test $(KVER))

demo: deps
	@$(MAKE) -s all
	@tools/demo

clean:
	rm -rf $(BUILD)

# ------------------------------------------------------------------ install
#
#   make install [DESTDIR=] [PREFIX=/usr/local] [LIBDIR=$(PREFIX)/lib]
#
# The module goes where Kbuild's modules_install puts it, under
# $(DESTDIR)/lib/modules/<kver>/updates/, for every kernel `make` built
# (KVER narrows them), then depmod unless DESTDIR is set; the rest under
# PREFIX. Debian's multiarch: LIBDIR=/usr/lib/x86_64-linux-gnu. systemd,
# udev and sysusers.d read $(PREFIX)/lib/... for /usr and /usr/local
# alike; a package passes /lib ones. `make uninstall` takes the same
# variables.
VERSION := 0.1.0
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/icfab
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
UDEVRULESDIR ?= $(PREFIX)/lib/udev/rules.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DKMSSRCDIR ?= /usr/src/icfab-$(VERSION)
# Debian's python3 looks in /usr/lib/python3/dist-packages for packages
# and in /usr/local/lib/python3.N/dist-packages for local installs.
PYTHON ?= /usr/bin/python3
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/$(shell \
	$(PYTHON) -c 'import sys; print("python%d.%d" % sys.version_info[:2])')/dist-packages)

D := $(DESTDIR)
INSTALL ?= install
PLOT_TOOLS := icfab-plot icfab-phases icfab-timeline
USER_BINS := icfabctl icfab-contention icfab-a2a
MAN8 := daemon/icfabd.8 tools/icfabctl/icfabctl.8 \
	tools/icfab-contention/icfab-contention.8
MAN1 := tools/a2a/icfab-a2a.1 $(addprefix tools/plot/,$(addsuffix .1,$(PLOT_TOOLS)))
MAN3 := $(wildcard libfabricdev/man/*.3)
FDEV_SO := libfabricdev.so.0.1.0
# The Python package: what libfabricdev/python builds into build/python/
# (the binding, and the torch backend when it is built); before that
# existed, the single-file binding.
PY_PKG := $(BUILD)/python/fabricdev
PY_MOD := libfabricdev/python/fabricdev.py

# Installing into / needs root; say so before anything is built.
install-root:
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" != 0 ]; then \
		echo "make install: installing into / (PREFIX=$(PREFIX), /lib/modules) needs root:" \
			"run 'sudo make install', or stage it with DESTDIR=DIR" >&2; \
		exit 1; \
	fi

install: install-root all
	@$(MAKE) -s install-kmod install-user
	@echo "installed; the device group is icfab: add users with 'usermod -aG icfab USER'"

# Kbuild's modules_install: what `make modules` built, the running
# kernel's module (or KVER's).
modules_install: install-root
	@$(MAKE) -s install-kmod KVER=$(or $(KVER),$(shell uname -r))

install-kmod: install-root
	@kvers=$$(tools/kvers build $(KVER)) || exit 1; set -e; \
	for kver in $$kvers; do \
		dir=$(BUILD)/kmod/$$kver; \
		[ -f $$dir/icfab.ko ] || { echo "install: no module for $$kver: run 'make' first" >&2; exit 1; }; \
		echo "  INSTALL icfab.ko for $$kver"; \
		$(MAKE) -s -C /lib/modules/$$kver/build M=$$dir \
			INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=updates \
			CONFIG_MODULE_SIG_ALL= modules_install > $$dir/install.log 2>&1 || \
			{ cat $$dir/install.log >&2; exit 1; }; \
		if [ -z "$(DESTDIR)" ]; then depmod -a $$kver; fi; \
	done

install-user: install-root
	$(INSTALL) -d $(D)$(BINDIR) $(D)$(SBINDIR) $(D)$(LIBDIR) $(D)$(INCLUDEDIR) \
		$(D)$(PKGCONFIGDIR) $(D)$(MANDIR)/man1 $(D)$(MANDIR)/man3 $(D)$(MANDIR)/man8 \
		$(D)$(SYSTEMDUNITDIR) $(D)$(UDEVRULESDIR) $(D)$(SYSUSERSDIR) \
		$(D)$(DOCDIR)/examples $(D)$(PYTHONDIR)
	$(INSTALL) -m 755 $(BUILD)/bin/icfabd $(D)$(SBINDIR)/
	$(INSTALL) -m 755 $(addprefix $(BUILD)/bin/,$(USER_BINS)) $(D)$(BINDIR)/
	$(INSTALL) -m 755 $(addprefix tools/plot/,$(PLOT_TOOLS)) $(D)$(BINDIR)/
	$(INSTALL) -m 644 $(MAN1) $(D)$(MANDIR)/man1/
	$(INSTALL) -m 644 $(MAN8) $(D)$(MANDIR)/man8/
	$(INSTALL) -m 644 $(MAN3) $(D)$(MANDIR)/man3/
	sed -e 's|/usr/local/sbin/icfabd|$(SBINDIR)/icfabd|g' \
		-e 's|^Documentation=.*|Documentation=man:icfabd(8) man:icfabctl(8)|' \
		daemon/icfabd.service > $(D)$(SYSTEMDUNITDIR)/icfabd.service
	chmod 644 $(D)$(SYSTEMDUNITDIR)/icfabd.service
	$(INSTALL) -m 644 packaging/60-icfab.rules $(D)$(UDEVRULESDIR)/
	$(INSTALL) -m 644 packaging/icfab.sysusers $(D)$(SYSUSERSDIR)/icfab.conf
	$(INSTALL) -m 644 packaging/icfab.modules-load $(D)$(DOCDIR)/examples/modules-load.d-icfab.conf
	$(INSTALL) -m 644 lib/topo/TOPOLOGY.md docs/SOCKET.md docs/LIBFABRICDEV.md \
		docs/TRACING.md docs/TIMING.md docs/TORCH.md docs/INSTALL.md \
		$(D)$(DOCDIR)/
	$(INSTALL) -m 644 libfabricdev/examples/a2a_example.c $(D)$(DOCDIR)/examples/
	$(INSTALL) -m 644 libfabricdev/include/fabricdev.h $(D)$(INCLUDEDIR)/
	$(INSTALL) -m 755 $(BUILD)/libfabricdev/$(FDEV_SO) $(D)$(LIBDIR)/
	ln -sfn $(FDEV_SO) $(D)$(LIBDIR)/libfabricdev.so.0
	ln -sfn libfabricdev.so.0 $(D)$(LIBDIR)/libfabricdev.so
	$(INSTALL) -m 644 $(BUILD)/libfabricdev/libfabricdev.a $(D)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|^libdir=.*|libdir=$(LIBDIR)|' \
		-e 's|^includedir=.*|includedir=$(INCLUDEDIR)|' \
		libfabricdev/libfabricdev.pc.in > $(D)$(PKGCONFIGDIR)/libfabricdev.pc
	chmod 644 $(D)$(PKGCONFIGDIR)/libfabricdev.pc
	@if [ -d $(PY_PKG) ]; then \
		echo "$(INSTALL) -d $(D)$(PYTHONDIR)/fabricdev"; \
		$(INSTALL) -d $(D)$(PYTHONDIR)/fabricdev && \
		cp -r --no-preserve=ownership $(PY_PKG)/. $(D)$(PYTHONDIR)/fabricdev/ && \
		find $(D)$(PYTHONDIR)/fabricdev -name __pycache__ -prune -exec rm -rf {} +; \
	else \
		echo "$(INSTALL) -m 644 $(PY_MOD) $(D)$(PYTHONDIR)/"; \
		$(INSTALL) -m 644 $(PY_MOD) $(D)$(PYTHONDIR)/; \
	fi
	@if [ -z "$(DESTDIR)" ]; then \
		echo ldconfig; ldconfig; \
		if command -v systemd-sysusers > /dev/null; then \
			systemd-sysusers $(SYSUSERSDIR)/icfab.conf; \
		else getent group icfab > /dev/null || groupadd -r icfab; fi; \
		if command -v udevadm > /dev/null && [ -d /run/udev ]; then \
			udevadm control --reload; udevadm trigger --subsystem-match=misc; fi; \
		if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; \
	fi

# The module's sources as DKMS wants them (dkms.conf, Kbuild, kmod/,
# uapi/): the icfab-dkms package ships them; `dkms add icfab/$(VERSION)`
# after this, or `dkms add .` from the tree (docs/INSTALL.md).
install-dkms-src: install-root
	$(INSTALL) -d $(D)$(DKMSSRCDIR)/kmod/model $(D)$(DKMSSRCDIR)/uapi/linux
	$(INSTALL) -m 644 dkms.conf Kbuild $(D)$(DKMSSRCDIR)/
	$(INSTALL) -m 644 $(wildcard kmod/*.[ch]) $(D)$(DKMSSRCDIR)/kmod/
	$(INSTALL) -m 644 $(wildcard kmod/model/*.[ch]) $(D)$(DKMSSRCDIR)/kmod/model/
	$(INSTALL) -m 644 $(wildcard uapi/linux/*.h) $(D)$(DKMSSRCDIR)/uapi/linux/

uninstall: install-root
	@for kver in $$(ls /lib/modules 2>/dev/null); do \
		for f in $(D)/lib/modules/$$kver/updates/icfab.ko*; do \
			[ -e "$$f" ] || continue; echo "rm $$f"; rm -f "$$f"; \
			[ -n "$(DESTDIR)" ] || depmod -a $$kver; \
		done; \
	done
	rm -f $(D)$(SBINDIR)/icfabd $(addprefix $(D)$(BINDIR)/,$(USER_BINS) $(PLOT_TOOLS))
	rm -f $(addprefix $(D)$(MANDIR)/man1/,$(notdir $(MAN1))) \
		$(addprefix $(D)$(MANDIR)/man8/,$(notdir $(MAN8))) \
		$(addprefix $(D)$(MANDIR)/man3/,$(notdir $(MAN3)))
	rm -f $(D)$(SYSTEMDUNITDIR)/icfabd.service $(D)$(UDEVRULESDIR)/60-icfab.rules \
		$(D)$(SYSUSERSDIR)/icfab.conf
	rm -rf $(D)$(DOCDIR)
	rm -f $(D)$(INCLUDEDIR)/fabricdev.h $(D)$(PKGCONFIGDIR)/libfabricdev.pc \
		$(addprefix $(D)$(LIBDIR)/,$(FDEV_SO) libfabricdev.so.0 libfabricdev.so libfabricdev.a)
	rm -rf $(D)$(PYTHONDIR)/fabricdev $(D)$(PYTHONDIR)/fabricdev.py
	@[ -n "$(DESTDIR)" ] || { echo ldconfig; ldconfig; }

# ---------------------------------------------------------------- packages
#
# Debian packages (debian/, debhelper): icfab-dkms, icfab-tools,
# libfabricdev0, libfabricdev-dev and python3-fabricdev, built from a copy
# of the tree under build/deb/ (dpkg-buildpackage writes to the parent of
# the source), then checked by lintian. The .debs land in build/deb/.
DEB_DIR := $(BUILD)/deb
DEB_TOOLS := dpkg-dev debhelper dh-dkms dh-python lintian

deb:
	@missing=$$(for p in $(DEB_TOOLS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
			grep -q '^install ok installed$$' || echo $$p; done); \
	[ -z "$$missing" ] || { echo "make deb needs: apt-get install" $$missing >&2; exit 1; }
	@dpkg-checkbuilddeps || { echo "make deb: install the build dependencies above (make deps has most)" >&2; exit 1; }
	@rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/icfab-$(VERSION)
	@tar --exclude=./build --exclude=./.git --exclude=./out -cf - . | \
		tar -C $(DEB_DIR)/icfab-$(VERSION) -xf -
	@echo "  DEB     build/deb/ (log: build/deb/build.log)"
	@cd $(DEB_DIR)/icfab-$(VERSION) && dpkg-buildpackage -us -uc -b \
		> $(DEB_DIR)/build.log 2>&1 || { tail -n 40 $(DEB_DIR)/build.log >&2; exit 1; }
	@echo "  LINTIAN build/deb/*.changes"
	@lintian --fail-on error $(DEB_DIR)/icfab_$(VERSION)_*.changes
	@ls $(DEB_DIR)/*.deb
