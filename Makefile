# SPDX-License-Identifier: GPL-2.0
#
# memhp-lab: out-of-tree memory-hotplug and sparsemem modules, their tests
# and experiments. `make help` lists the targets.
#
# The modules are built against the headers of the default kernel (the
# first of tools/kernels.tsv); KVER=<release> picks another of the suite's
# kernels and KDIR=/path/to/tree any other configured tree.

TOP	:= $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

# LAB=root, the default: every target runs inside the lab's own Debian
# root in the cache, as a normal user too, and nothing is installed on the
# host (tools/lab/lab.sh; Documentation/admin-guide/lab-root.rst).
# LAB=host installs what the suite needs on a Debian bookworm host instead
# (root or sudo), as hosts set up before the lab's root had it.
LAB	?= root
$(if $(filter-out host root,$(LAB)),$(error LAB=$(LAB): host or root))
# memhp-vm, check.py and run.py enter the root themselves when run outside
# it with LAB=root (memhp_host.enter_lab); under LAB=host they stay out.
export LAB
comma	:= ,
# The lab's targets below come first in this file; the default is all.
.DEFAULT_GOAL := all

.PHONY: lab-check lab-clean lab-selftest lab-host
# The host prerequisites of the lab's root.
lab-check:
	@$(TOP)/tools/lab/lab.sh check
# Removes the lab's cache, its roots included.
lab-clean:
	@$(TOP)/tools/lab/lab.sh clean
# The lab's flow on a fresh clone leaves the host unchanged (KTAP; as
# root, LAB_SELFTEST_ARGS="--user NAME" runs it as NAME; "--full": all of
# make check, not its unit stage).
lab-selftest:
	@$(TOP)/tools/lab/selftest.sh $(LAB_SELFTEST_ARGS)

# CMD on a Debian HOST_SUITE host that has only the lab's prerequisites
# (a root of that release in the cache; as root): the flow on Debian 13.
HOST_SUITE ?= trixie
lab-host:
	@$(TOP)/tools/lab/other-host.sh $(HOST_SUITE) '$(subst ','\'',$(or $(CMD),make setup && make check))'

LAB_GOALS := $(filter-out lab-check lab-clean lab-selftest lab-host,$(or $(MAKECMDGOALS),all))
ifeq ($(LAB)$(MEMHP_IN_LAB),root)
ifneq ($(LAB_GOALS),)
# Outside the root: the same make inside it. The trees KDIR= and KERNEL=
# name are mounted there at their own paths.
# make 4.4's jobserver is a named pipe the root's make 4.3 cannot name:
# the inner make then runs its own -j. With -n the root is still made
# when it is missing (lab-enter is a + recipe).
.PHONY: lab-enter $(LAB_GOALS)
$(LAB_GOALS): lab-enter ; @:
lab-enter: $(filter lab-clean,$(MAKECMDGOALS))
	+@MAKEFLAGS='$(subst ','\'',$(filter-out --jobserver-auth=fifo:%,$(MAKEFLAGS)))' \
		MEMHP_LAB_BINDS="$(KDIR) $(subst $(comma), ,$(KERNEL))" \
		$(TOP)/tools/lab/lab.sh enter $(MAKE) --no-print-directory -C $(TOP) $(LAB_GOALS)
endif
else
BUILD	:= $(TOP)/build
KSRC	:= $(BUILD)/ksrc
VENV	:= $(TOP)/.venv
PY	:= $(VENV)/bin/python
SETUP	:= $(TOP)/tools/setup.sh

# The kernels the suite targets: tools/kernels.tsv (series, release
# pattern, source), the newest installed release of each. make setup
# installs them; 7.3's headers were made with gcc-14 (bookworm has gcc-12),
# so setup puts them into a trixie root with that compiler, BUILD_ROOT
# (Documentation/kernel-compat.rst).
BUILD_ROOT ?= /var/cache/memhp-lab/trixie-root
KERNELS_TABLE := $(TOP)/tools/kernels.tsv
KERNEL_PATTERNS := $(shell awk -F'\t' '!/^\#/ && NF >= 2 { print $$2 }' $(KERNELS_TABLE))
KERNEL_SERIES := $(shell awk -F'\t' '!/^\#/ && NF >= 2 { print $$1 }' $(KERNELS_TABLE))
# $(call newest-release,ERE): the newest installed release a pattern matches.
newest-release = $(shell ls /lib/modules $(BUILD_ROOT)/usr/lib/modules 2>/dev/null | \
		 grep -xE '$(1)' | sort -uV | tail -n1)
# Every kernel `make check`, `make run` and `make modules-all` cover, in
# the table's order.
KVERS_FOUND := $(strip $(foreach p,$(KERNEL_PATTERNS),$(call newest-release,$(p))))
KVERS	?= $(KVERS_FOUND)
# The default kernel: the table's first.
KVER_DEFAULT := $(call newest-release,$(firstword $(KERNEL_PATTERNS)))

# Your kernel: KERNEL=<tree>[,<tree or series>...] names the kernels
# `make check`, `make run` and `make vm-shell` use instead of the table's:
# a tree you built (in-tree or the O= directory; its modules are built
# with KDIR=<tree>, its bzImage boots with its own modules), or a series
# or release of tools/kernels.tsv. `make kconfig` prints the options the
# suite needs (Documentation/testing.rst, "Your kernel").
KERNEL_TREES := $(foreach k,$(subst $(comma), ,$(KERNEL)),$(if $(findstring /,$(k)),$(k)))
ifneq ($(KERNEL),)
override CHECK_ARGS += --kernels $(KERNEL)
override RUN_ARGS += --kernels $(KERNEL)
override VM_ARGS += --kernel $(firstword $(subst $(comma), ,$(KERNEL)))
endif

# One kernel per build: KVER=<release> builds against its headers,
# KDIR=<tree> against any configured tree (KVER is then its release,
# UTS_RELEASE: Debian's kernel.release says 6.1.192 for 6.1.0-56-amd64);
# neither: the default kernel (the table's first).
ifneq ($(KDIR),)
KVER	?= $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
	     $(KDIR)/include/generated/utsrelease.h 2>/dev/null)
else
# KSERIES=<a series of tools/kernels.tsv>: its newest installed release
# (empty when none is).
ifneq ($(KSERIES),)
KVER	?= $(call newest-release,$(shell awk -F'\t' '!/^\#/ && $$1 == "$(KSERIES)" { print $$2 }' $(KERNELS_TABLE)))
endif
KVER	?= $(KVER_DEFAULT)
# A kernel whose headers only BUILD_ROOT has (7.3) is built there.
KDIR	:= $(firstword $(wildcard /lib/modules/$(KVER)/build \
	     $(BUILD_ROOT)/usr/lib/modules/$(KVER)/build) /lib/modules/$(KVER)/build)
endif

# Kbuild runs with the compiler the kernel was built with
# (CONFIG_CC_VERSION_TEXT, first word). When that names a gcc the host
# lacks ("x86_64-linux-gnu-gcc-14", "gcc-14") and BUILD_ROOT has it, the
# Kbuild step runs there (tools/in-build-root.sh), KDIR as seen there.
# Anything else builds on the host: the first word of a clang tree's text
# is "Debian" or "clang", no compiler name.
KCC	:= $(shell sed -n 's/^CONFIG_CC_VERSION_TEXT="\{0,1\}\([^ "]*\).*/\1/p' \
	     $(KDIR)/include/config/auto.conf 2>/dev/null | \
	     grep -xE '([a-z0-9_]+-linux-gnu-)?gcc(-[0-9]+)?')
ifneq ($(KCC),)
ifeq ($(shell command -v $(KCC)),)
ifneq ($(wildcard $(BUILD_ROOT)/usr/bin/$(KCC)),)
IN_ROOT	= IN_BUILD_ROOT_BINDS="$(filter-out $(BUILD_ROOT)/% $(TOP)/%,$(abspath $(KDIR)))" \
	  $(TOP)/tools/in-build-root.sh $(BUILD_ROOT) $(TOP)
KMAKE	= $(IN_ROOT) make
KDIR_K	= $(patsubst $(BUILD_ROOT)/%,/%,$(KDIR))
endif
endif
endif
KMAKE	?= $(MAKE)
KDIR_K	?= $(KDIR)
# A tree built with CC=<that compiler> needs it for its modules too;
# Debian's headers name theirs in .kernelvariables.
ifneq ($(KCC),)
ifeq ($(wildcard $(KDIR)/.kernelvariables),)
KMAKE	+= CC=$(KCC)
endif
endif

# Each kernel's modules are built in a tree of their own,
# build/modules/<release>/, which mirrors the sources as symlinks (Kbuild
# writes its objects beside the sources it compiles, and two kernels must
# not overwrite each other's). Guests load build/modules/$(uname -r)/.
MODOUT	:= $(BUILD)/modules/$(KVER)
MOD_SRCS = $(shell cd $(TOP) && find Kbuild mm drivers include scripts -name Kbuild -o -name "*.sh" -o \
	     -name '*.c' -o -name '*.h' | grep -v '\.mod\.c$$')

# Our C sources that checkpatch must accept (kernel and user space alike).
CHECKPATCH_FILES = $(shell cd $(TOP) && git ls-files -co --exclude-standard \
		     -- '*.c' '*.h' | grep -v '^build/')
# Each kernel's checkpatch.pl: 6.12's knows more (const structs, strcpy),
# 7.3's more again (kmalloc_obj()).
CHECKPATCH	 = $(KSRC)/scripts/checkpatch.pl $(BUILD)/ksrc-6.12/scripts/checkpatch.pl \
		   $(BUILD)/ksrc-7.3/scripts/checkpatch.pl
# Ignored types: FILE_PATH_CHANGES (MAINTAINERS does not apply out of tree),
# CAMELCASE (kernel page-flag APIs such as __SetPageMovable or PageOffline
# are CamelCase by design; checkpatch accepts them only when it can read the
# kernel's own include/, which --no-tree cannot).
CHECKPATCH_FLAGS = --no-tree --strict --quiet --no-summary --show-types --terse \
		   --ignore FILE_PATH_CHANGES,CAMELCASE -f

.PHONY: all modules modules-all mod-tree kver-check clean clean-modules setup setup-check checkpatch sparse unit \
	selftests check check-long run help install dkms-install dkms-check vm-shell print-kver print-kvers print-build-root print-kdir print-kcc \
	setup-7.3 count profile unit-c unit-py unit-host

all: modules

# `make setup` installs everything; every other target calls setup-check,
# which installs only what is missing (and is silent when nothing is).
setup:
	@$(SETUP)

setup-check:
	@$(SETUP) --check --quiet >/dev/null 2>&1 || $(SETUP)

# The 7.3 part of `make setup` alone (headers, image, trixie build root).
setup-7.3:
	@$(SETUP) --kernel 7.3

# The leading + hands KMAKE the jobserver (make -jN) also when it is the
# build-root wrapper.
modules: setup-check mod-tree
	+$(KMAKE) -C $(KDIR_K) M=$(MODOUT) modules
	@$(call copy-uapi,virtio_mem.h)

# The kernel's own uapi headers the guest tests read (virtio_mem.h's
# feature bits), beside the modules in build/modules/KVER/uapi/: a guest
# sees the repository, and not a build root's headers.
KSOURCE = $(firstword $(wildcard /lib/modules/$(KVER)/source $(BUILD_ROOT)/usr/lib/modules/$(KVER)/source \
	    $(KDIR)/source $(if $(wildcard $(KDIR)/include/uapi/linux),$(KDIR))))
copy-uapi = [ -z "$(KSOURCE)" ] || [ ! -r $(KSOURCE)/include/uapi/linux/$(1) ] || \
	install -D -m 644 $(KSOURCE)/include/uapi/linux/$(1) $(MODOUT)/uapi/linux/$(1)

# KVER and KDIR must name one kernel: a build filed under one release but
# compiled against another's headers only shows at insmod (vermagic).
kver-check:
	@test -n "$(KVER)" || { echo "no kernel release: KDIR=$(KDIR) has no" \
		"include/generated/utsrelease.h, or the default kernel (tools/kernels.tsv, first line) is not installed (make setup)"; exit 1; }
	@test -d $(KDIR) || { echo "no kernel tree $(KDIR) (KVER=$(KVER)): make setup" \
		"(7.3: make setup-7.3)"; exit 1; }
	@rel=$$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' \
		$(KDIR)/include/generated/utsrelease.h 2>/dev/null); \
	test -z "$$rel" -o "$$rel" = "$(KVER)" || { echo "KVER=$(KVER) but KDIR=$(KDIR)" \
		"is $$rel: give one of them"; exit 1; }

# build/modules/$(KVER): a relative symlink per source file (new ones
# added, wrong or stale ones replaced or removed), so edits in this tree,
# and only this tree, are what every kernel builds.
mod-tree: kver-check
	@mkdir -p $(MODOUT)
	@cd $(TOP) && for f in $(MOD_SRCS); do \
		[ "$$(readlink -f $(MODOUT)/$$f)" = "$(TOP)/$$f" ] || \
		{ mkdir -p $(MODOUT)/$$(dirname $$f) && ln -srfn $(TOP)/$$f $(MODOUT)/$$f; }; done
	@find $(MODOUT) -xtype l -delete

# The modules for every kernel of KVERS.
modules-all: setup-check
	@set -e; for k in $(KVERS); do \
		$(MAKE) --no-print-directory KVER=$$k modules; done

# Each kernel's module tree is cleaned by that kernel's Kbuild, where it
# builds (KVER=<its release> picks KDIR, KDIR_K and KMAKE as for `modules`:
# 7.3's in the build root); a tree whose kernel is gone is only removed.
clean:
	-for d in $(BUILD)/modules/*/; do [ -d "$$d" ] || continue; \
		$(MAKE) --no-print-directory KVER=$$(basename $$d) clean-modules; done
	rm -rf $(BUILD)/modules
	-$(MAKE) -C tools/testing/unit OUTPUT=$(BUILD)/unit clean
	-$(MAKE) -C tools/testing/selftests/memhp OUTPUT=$(BUILD)/selftests clean
	rm -rf $(BUILD)/unit $(BUILD)/selftests $(BUILD)/vm

# One kernel's module tree (KVER), by its Kbuild: `make clean` runs this
# for every tree of build/modules/.
clean-modules:
	$(if $(and $(wildcard $(MODOUT)),$(wildcard $(KDIR))),$(KMAKE) -C $(KDIR_K) M=$(MODOUT) clean)

# Static checks: both print nothing and exit 0 when the tree is clean.
# The checkpatch.pl run side by side, each into its
# own file, printed afterwards in order.
checkpatch: setup-check
	@cd $(TOP) && rc=0 && out=$$(mktemp -d) && i=0 && for cp in $(CHECKPATCH); do \
		i=$$((i + 1)); perl $$cp $(CHECKPATCH_FLAGS) $(CHECKPATCH_FILES) >$$out/$$i 2>&1 & \
		done; wait; i=0; for cp in $(CHECKPATCH); do i=$$((i + 1)); \
		if [ -s $$out/$$i ]; then echo "$$cp:"; cat $$out/$$i; rc=1; fi; done; \
		rm -rf $$out; exit $$rc

# Fails when the build fails (its status, not only its output: a missing
# build root, a modpost ERROR, make's "*** ... Error 2") or when the log
# has what sparse, gcc, modpost or make report. A kernel Makefile that finds
# no usable sparse says "... not available or not up to date" and builds
# without it: that fails here too. The leading + hands KMAKE the jobserver
# also when it is the build-root wrapper, not $(MAKE).
SPARSE_BAD := warning:|error:|ERROR:|Error [0-9]|not available
sparse: setup-check mod-tree
	+@rc=0; $(KMAKE) --no-print-directory -C $(KDIR_K) M=$(MODOUT) C=2 modules \
		>$(MODOUT)/sparse.log 2>&1 || rc=$$?; \
	grep -E '$(SPARSE_BAD)' $(MODOUT)/sparse.log; \
	if [ $$rc -ne 0 ]; then tail -n 5 $(MODOUT)/sparse.log; \
		echo "make sparse: the build failed (exit $$rc); log: $(MODOUT)/sparse.log"; exit 1; fi; \
	! grep -qE '$(SPARSE_BAD)' $(MODOUT)/sparse.log

# The memhp-count TCG plugin (instruction counts) and memhp-mark.
count: setup-check
	@$(MAKE) -s -C $(TOP)/tools/testing/count

# Profile a guest command by counted instructions: CMD runs between two
# markers in a TCG guest with the plugin; the table is per guest function.
PROFILE_OUT ?= $(TOP)/build/profile.json
profile: count
	@test -n "$(CMD)" || { echo "make profile CMD='...' [VM_ARGS=...] [PROFILE_ARGS=...]" >&2; false; }
	@printf '%s\n' '$(subst ','\'',$(CMD))' > $(BUILD)/profile.sh
	$(TOP)/tools/testing/vm/memhp-vm $(VM_ARGS) --count $(PROFILE_OUT) -- \
		memhp-mark run profile -- bash $(BUILD)/profile.sh
	$(TOP)/tools/testing/count/memhp-count-report $(PROFILE_ARGS) $(PROFILE_OUT)

# The unit tests: the portable cores' (C, kselftest harness, KTAP) and the
# host side's (pytest: tools/testing/memhp_host's logic, the QEMU command
# lines and patches, the count report). No guest boots. unit-host: only
# memhp_host's own tests (no QEMU started), in seconds.
unit: unit-c unit-py

unit-c: setup-check
	@$(MAKE) --no-print-directory -C tools/testing/unit OUTPUT=$(BUILD)/unit run_tests

PYTEST_DIRS = tools/testing/tests $(wildcard tools/testing/count/test_*.py)
unit-py: setup-check
	@cd $(TOP) && $(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS) $(PYTEST_DIRS)
unit-host: setup-check
	@cd $(TOP) && $(PY) -m pytest -q -p no:cacheprovider -m "not qemu" $(PYTEST_ARGS) \
		tools/testing/tests

# The pfn lookup benchmark (NetBSD uvm_physseg workloads on five section
# tables): tables, CSV, PNG in results/bench-pfn/. BENCH_ARGS=--full adds
# the 100M-lookup point; --reps R, --quick.
.PHONY: bench-pfn
bench-pfn: setup-check
	@$(MAKE) --no-print-directory -C tools/testing/bench pfn \
		OUTPUT=$(BUILD)/bench RESULTS=$(TOP)/results/bench-pfn \
		BENCH_ARGS="$(BENCH_ARGS)"

# Build the in-guest selftests (they run inside a guest: see `make check`).
selftests: setup-check modules
	@$(MAKE) --no-print-directory -C tools/testing/selftests/memhp OUTPUT=$(BUILD)/selftests all

# Everything: unit tests, build, static checks, selftests in QEMU guests.
# Ends with one KTAP totals line; non-zero exit on any failure.
check: setup-check
	@$(PY) $(TOP)/tools/testing/check.py $(CHECK_ARGS)

# The guest tests at their long forms: soak's 1000 operations and 5000
# random fuzz inputs per file.
CHECK_LONG_ENV ?= SOAK_OPS=1000 FUZZ_RANDOM=5000
check-long: setup-check
	@$(PY) $(TOP)/tools/testing/check.py --only guest --guest-timeout 10800 \
		$(foreach e,$(CHECK_LONG_ENV),--env $(e)) $(CHECK_ARGS)

# The experiments on every kernel of KVERS (RUN_ARGS=--kernels 6.1 for one),
# side by side with the ratios; writes results/report.md. Instruction counts
# are on under TCG unless COUNT=0 (COUNT=1: on, KVM or not).
run: setup-check $(if $(filter 0,$(COUNT)),,count)
	@$(PY) $(TOP)/tools/testing/run.py $(if $(FULL),--full) \
		$(if $(COUNT),$(if $(filter 0,$(COUNT)),--count off,--count auto)) $(RUN_ARGS)

# Hotplug churn soak (tools/testing/selftests/memhp/soak.sh, 50 operations
# of it run in `make check`): SOAK_OPS random operations, SOAK_SEED repeats.
SOAK_OPS ?= 1000
.PHONY: soak check-debug kconfig tree-modules qemu-fixed qemu-newest qemu-ab
soak: setup-check modules selftests
	@$(TOP)/tools/testing/vm/memhp-vm --timeout $(or $(SOAK_TIMEOUT),7200) \
		--mem 3G --append mem=2G -- \
		'SOAK_OPS=$(SOAK_OPS) SOAK_SEED=$(SOAK_SEED) tools/testing/selftests/memhp/soak.sh'

# The selftests on a debug kernel (KASAN, lockdep, DEBUG_VM, DEBUG_PAGEALLOC,
# KFENCE, PAGE_OWNER, kmemleak, fault injection) built from Debian's
# linux-source-6.1 into build/debug-kernel/ (once; later runs reuse it),
# then a kmemleak scan; KVER=<series> (6.12, 7.3) builds that series'
# source into build/debug-kernel-<series>/ instead. CHECK_DEBUG_ARGS=
# "--help" for options.
check-debug: setup-check
	@$(TOP)/tools/testing/debug/check-debug.sh \
		$(if $(filter $(KERNEL_SERIES),$(KVER)),--series $(KVER)) $(CHECK_DEBUG_ARGS)

# An interactive-free guest shell command: make vm-shell CMD='cat /proc/meminfo'
vm-shell: setup-check $(if $(KERNEL_TREES),tree-modules,modules-all)
	@$(TOP)/tools/testing/vm/memhp-vm $(VM_ARGS) -- $(or $(CMD),true)

# The modules for each kernel tree of KERNEL.
tree-modules: setup-check
	@set -e; for t in $(KERNEL_TREES); do \
		$(MAKE) --no-print-directory KDIR=$$t KERNEL= modules; done

# QEMU with tools/qemu/*.patch (the stale-translation fix, and a vCPU's
# cached dispatch kept alive: the TCG dispatch race), built from
# Debian's source of the installed version in a root of its own and cached
# (tools/qemu/build.sh; minutes the first time; QEMU_ORIG=11.1.1 builds that
# release with tools/qemu/dev's patch instead, QEMU_STOCK=1 without a
# patch, for an A/B on one source). memhp-vm --qemu
# PATH runs guests with it; make qemu-ab compares it with the stock QEMU on
# the stale-code reproducers, the hold off (QEMU_AB_KERNELS, default 6.1
# 6.12). Neither is part of make check.
qemu-fixed:
	@$(TOP)/tools/qemu/build.sh

# Debian's newest QEMU (trixie-backports) in a root of its own, with a
# wrapper that runs it on this host: memhp-vm --qemu PATH, check.py --qemu.
qemu-newest:
	@$(TOP)/tools/qemu/debian-qemu.sh

qemu-ab: setup-check modules-all selftests
	@$(TOP)/tools/qemu/ab.sh $(QEMU_AB_KERNELS)

# The kernel options the modules and selftests need, as a config fragment
# to merge into your kernel's (tools/testing/selftests/memhp/config).
kconfig:
	@cat $(TOP)/tools/testing/selftests/memhp/config

# KMAKE and KDIR_K as for `modules`: modules_install runs where the
# kernel's Kbuild step runs, so for a kernel built in the build root (7.3)
# it installs into that root's /lib/modules/KVER/updates, not the host's.
install: modules
	$(KMAKE) -C $(KDIR_K) M=$(MODOUT) modules_install

dkms-install: setup-check
	dkms install $(TOP) -k $(KVER)

# dkms.conf is right: DKMS builds every module of it for KVER in throwaway
# trees (nothing registered or installed on this machine); in the build
# root where the kernel's Kbuild step runs there (its dkms).
dkms-check: setup-check
	@$(IN_ROOT) $(TOP)/tools/dkms-check.sh $(KVER)

print-kver:
	@echo $(KVER)

print-kvers:
	@echo $(KVERS)

print-build-root:
	@echo $(BUILD_ROOT)

# KVER's build tree, and the compiler it was built with (empty when its
# .config names none): tools/testing/debug/build-kernel.sh starts from
# Debian's config and builds with Debian's compiler
# (make print-kver print-kdir print-kcc KSERIES=7.3).
print-kdir:
	@echo $(KDIR)

print-kcc:
	@echo $(KCC)

help:
	@echo 'memhp-lab targets (KVER=$(KVER), KDIR=$(KDIR); kernels: $(KVERS))'
	@echo '  make [modules]  build every module for KVER into build/modules/KVER/, -Werror'
	@echo '                  (KVER=<release> or KDIR=<tree> picks the kernel; default 6.1)'
	@echo '  make modules-all  the modules for every kernel of KVERS (make print-kvers)'
	@echo '  make print-kvers  the kernel releases check and run cover'
	@echo '  make setup-7.3  only the 7.3 part of make setup: headers, image, trixie build root'
	@echo '  make setup      the lab'\''s roots in the cache (kernels, compilers, QEMU), the'
	@echo '                  linux-source pieces and .venv in the clone; LAB=host: on the host'
	@echo '  make lab-check  the host prerequisites; make lab-clean removes the cache'
	@echo '  make lab-selftest  the flow on a fresh clone leaves the host unchanged'
	@echo '  make lab-host   CMD (default: make setup && make check) on a Debian 13 host'
	@echo '                  with only the prerequisites (HOST_SUITE=trixie; as root)'
	@echo '  make check      unit tests, build, checkpatch, sparse, selftests in QEMU guests'
	@echo '                  on each kernel; ends with a KTAP "# Totals:" line'
	@echo '                  (CHECK_ARGS="--help"; CHECK_ARGS="--kernels 6.12" for one kernel)'
	@echo '                  (KERNEL=/path/to/your/tree[,6.12]: your kernel, with others)'
	@echo '  make kconfig    the kernel options the suite needs (a config fragment)'
	@echo '  make check-long the guest tests at their long forms (SOAK_OPS=1000,'
	@echo '                  FUZZ_RANDOM=5000: CHECK_LONG_ENV); hours on 2 cores'
	@echo '  make run        experiments in guests on every kernel, side by side with ratios,'
	@echo '                  results/report.md (RUN_ARGS="--kernels 6.1" for one; "--help");'
	@echo '                  FULL=1: every experiment at its full repetitions; with'
	@echo '                  instruction counts of the phases experiments mark under TCG'
	@echo '                  (COUNT=0: none, times without the plugin; COUNT=1: also with KVM)'
	@echo '  make unit       user-space unit tests of the portable cores only'
	@echo '  make count      the memhp-count TCG plugin and memhp-mark (instruction counts)'
	@echo '  make profile CMD=...  count the instructions of a guest command, per function'
	@echo '                  (VM_ARGS="--kernel 6.12"; PROFILE_ARGS="--top 40")'
	@echo '  make soak       hotplug churn soak in a guest (SOAK_OPS=1000, SOAK_SEED=)'
	@echo '  make check-debug  selftests on a KASAN/lockdep/kmemleak kernel (builds it once)'
	@echo '  make qemu-fixed QEMU with tools/qemu/'s fixes (stale code, dispatch race), cached'
	@echo '  make qemu-newest  Debian'\''s newest QEMU (trixie-backports), runnable here'
	@echo '  make qemu-ab    stock against fixed QEMU on the stale-code reproducers, no hold'
	@echo '  make bench-pfn  pfn lookup benchmark, 5 section tables (BENCH_ARGS=--full: 100M)'
	@echo '  make selftests  build the in-guest selftests'
	@echo '  make checkpatch each kernel'\''s checkpatch.pl --no-tree --strict on our C (silent if clean)'
	@echo '  make sparse     the modules for KVER through sparse, C=2 (silent if clean)'
	@echo '  make vm-shell CMD=...  run one command as root in a hotplug-capable guest'
	@echo '                  (VM_ARGS="--kernel 6.12" for another kernel)'
	@echo '  make install    modules_install into /lib/modules/$$KVER/updates (where KVER'\''s'
	@echo '                  Kbuild runs: the lab'\''s root, its build root for 7.3; LAB=host'
	@echo '                  on the host)'
	@echo '  make dkms-install  register, build and install with DKMS (for KVER)'
	@echo '  make dkms-check    DKMS builds every module of dkms.conf in a scratch tree'
	@echo '  make clean'
	@echo 'Guest runner: tools/testing/vm/memhp-vm --help'

endif # LAB=root outside the root
