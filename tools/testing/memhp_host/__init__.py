# SPDX-License-Identifier: GPL-2.0
"""memhp_host: the host side of memhp-lab, as one package.

The programs users run are thin entry points into it:
tools/testing/vm/memhp-vm (vm.main), tools/testing/check.py (make check,
check.main) and tools/testing/run.py (make run, run.main). Its modules:

  kernels    the kernel model: tools/kernels.tsv, installed releases,
             kernel trees, images, and the --kernels filter
  selftests  the selftests' metadata (memhp-vm:, memhp-budget:) and the
             config fragment (make kconfig)
  ktap       KTAP parsing (kselftest runner output, pytest's JUnit XML),
             the guest's timings, and the merged report of make check
  cmdline    the guest's QEMU and virtme-ng command lines
  accel      KVM or TCG: /dev/kvm access and the probe boot
  relay      the QMP relay between the guest and its QEMU, with the hold
             of freed RAM offsets under TCG
  guestlog   what a guest's logs say: kernel problem reports, stalls
  vm         memhp-vm: one guest run, its deadlines and its verdict
  check      make check: stages, budgets and times
  run        make run: the experiments
  report     make run's report: tables side by side, instruction counts

Nothing here runs in a guest: the guest's scripts are in
tools/testing/guest/.
"""

import os

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TESTING = os.path.join(TOP, "tools", "testing")
SELFTESTS = os.path.join(TESTING, "selftests", "memhp")
EXPERIMENTS = os.path.join(TESTING, "experiments")
GUEST = os.path.join(TESTING, "guest")
RESULTS = os.path.join(TOP, "results")
BUILD = os.path.join(TOP, "build")
# The runner's entry point: check and run start guests through it.
MEMHP_VM = os.path.join(TESTING, "vm", "memhp-vm")
VENV = os.path.join(TOP, ".venv")
