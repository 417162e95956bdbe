# SPDX-License-Identifier: GPL-2.0
#
# What every userspace Makefile of icfab shares (lib/, daemon/, tools/*):
# the defaults for a build on its own (the top-level Makefile exports TOP,
# BUILD, CC and USER_CFLAGS), the libraries found by pkg-config, and the
# stamps that rebuild when the compiler or the flags change. A Makefile
# sets TOP, then includes $(TOP)/lib/user.mk.

BUILD ?= $(TOP)/build
ifeq ($(origin CC),default)
CC := gcc
endif
USER_CFLAGS ?= -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wstrict-prototypes \
	-Wmissing-prototypes -I$(TOP)/uapi $(CFLAGS)
PKG_CONFIG ?= pkg-config

# lib/'s archives and headers: libicfabtopo.a uses libicfab.a.
ICFAB_LIB := $(BUILD)/lib/libicfab.a
ICFAB_TOPO_LIB := $(BUILD)/lib/libicfabtopo.a $(ICFAB_LIB)
ICFAB_CFLAGS := -I$(TOP)/lib/include

# Outside lib/, its archives are made by lib/Makefile, which knows when.
ifndef ICFAB_LIB_SELF
$(ICFAB_TOPO_LIB): FORCE
	@$(MAKE) -s -C $(TOP)/lib all
endif

# $(call pkg_libs,PACKAGE): pkg-config --libs, or stop with what to do.
pkg_libs = $(or $(shell $(PKG_CONFIG) --libs $(1)),\
	$(error $(1) not found by $(PKG_CONFIG): run 'make deps' at the top))

# $(call flags_stamp,FILE,TEXT): FILE changes when TEXT does; depend on it.
define flags_stamp
$(1): FORCE
	@mkdir -p $$(dir $$@)
	@echo '$(subst ','\'',$(2))' | cmp -s - $$@ 2>/dev/null || \
		echo '$(subst ','\'',$(2))' > $$@
endef

.PHONY: FORCE
.DEFAULT_GOAL := all
