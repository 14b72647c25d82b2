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
LAB_SH = os.path.join(TOP, "tools", "lab", "lab.sh")


# The entry points' options whose values name places on the host (a
# comma-separated list for --kernels), and the directories of the root's
# own system that are never mounted over.
PATH_OPTIONS = ("--kernel", "--kernels", "--guest-kernels", "--qemu", "--count")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/sys",
               "/dev", "/run", "/boot", "/var", "/tmp")


def lab_binds(args):
    """The directories the path options of ARGS name outside the clone (a
    --kernel tree, a --qemu binary's directory, the directory a --count
    file goes to) and the working directory, for lab.sh to mount at their
    own paths. Nothing after "--" (the guest's command) and no directory
    of the root's own system is taken; a path with blanks cannot be passed
    and is left out."""
    binds = []
    values = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        opt, eq, val = arg.partition("=")
        if opt not in PATH_OPTIONS:
            continue
        if not eq:
            val = args[i + 1] if i + 1 < len(args) else ""
        values += val.split(",")
    # The working directory too: relative paths are taken from it.
    for val in values + [os.getcwd()]:
        # A release name (--kernel 6.12) is not a place.
        if not val or ("/" not in val and not os.path.exists(val)):
            continue
        path = os.path.abspath(val)
        if not os.path.isdir(path):
            path = os.path.dirname(path)
        if not os.path.isdir(path) or any(c.isspace() for c in path):
            continue
        if path == "/" or any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS):
            continue
        if os.path.commonpath([path, TOP]) != TOP and path not in binds:
            binds.append(path)
    return binds


def enter_lab(entry, argv):
    """Run the entry point ENTRY again inside the lab's root when it was
    started outside it and the lab's root is the mode (LAB=root, the
    default; the Makefile exports LAB, and LAB=host runs on the host).
    Inside, it runs with the clone's .venv python, or the root's python3
    before make setup has made it."""
    if os.environ.get("MEMHP_IN_LAB") == "1" or os.environ.get("LAB", "root") != "root":
        return
    binds = " ".join(lab_binds(argv[1:]) + os.environ.get("MEMHP_LAB_BINDS", "").split())
    os.environ["MEMHP_LAB_BINDS"] = binds
    py = os.path.join(VENV, "bin", "python")
    py = py if os.path.exists(py) else "python3"
    os.execv(LAB_SH, [LAB_SH, "enter", py, os.path.realpath(entry)] + argv[1:])
