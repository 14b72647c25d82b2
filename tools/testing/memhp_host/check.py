# SPDX-License-Identifier: GPL-2.0
"""make check: every test of the suite, one KTAP report.

Stages, in order:
  unit     user-space unit tests of the portable cores (make unit-c) and
           of the host side (make unit-py: pytest, no guest)
  static   for each kernel: modules build with -Werror, sparse, DKMS build
           of dkms.conf in a scratch tree; once: selftests build,
           checkpatch (each kernel's checkpatch.pl)
  guest    the selftests of tools/testing/selftests/memhp inside QEMU
           guests, once per kernel (tools/kernels.tsv: `make
           print-kvers`), a KTAP node per kernel ("guest 6.12.117+deb12-amd64");
           tests naming the same `memhp-vm:` options share one boot
  runner   the VM runner's own tests (tools/testing/vm/selftest.sh): it must
           fail a guest that logged a WARNING and pass exit codes through

A test that applies to one kernel only reports SKIP on the other, with the
reason, and is not counted as a pass there.

Progress lines are KTAP diagnostics ("# ..."); each stage then reports its
results as a nested KTAP subtest. The end is a "# Totals:" line over every
leaf test and a plain "check: N passed, N failed, N skipped" line. Before
them, the figures the guest tests reported ("figures: ..." diagnostics:
inputs tried, cycles, operations, bytes verified) are gathered, one line
per test program, so a run ends with what it exercised. Exit 0
only when nothing failed; a skip is reported with its reason, never counted
as a pass.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import time

from . import BUILD, MEMHP_VM, TESTING, TOP
from .guestlog import vm_messages
from .kernels import (guest_kernels, kernel_tree, kernel_var, kernels, release_of,
                      select_kernels, series)
from .ktap import (Leaf, StageResult, collect_figures, guest_times, parse_junit,
                   parse_runner_tap, stage_node, totals, totals_lines)
from .selftests import budget_of, config_gaps, fragment_sections, guest_groups


# The guests' CPU: QEMU's TCG -cpu max without the CPUID bits that make
# the guest kernel and glibc use string instructions TCG emulates one
# element per step (ERMS, FSRM: clear_page_erms, copy_mc_enhanced_fast_
# string, memcpy's rep movsb) and without 5-level paging (LA57: one more
# level in every emulated page walk). No test is about either, and the
# same tests run faster without them: Documentation/testing.rst ("Time and
# budgets") gives the two commands that compare. make run keeps the full
# model (its figures are the cost of the kernel's own choices).
CHECK_CPU_FEATURES = "erms=off,fsrm=off,la57=off"


def log(msg):
    print(f"# {msg}", flush=True)


def run_streamed(cmd, prefix, env=None, stamps=None):
    """Runs cmd, echoing its output as diagnostics; returns (rc, output).

    With stamps (a list), each output line is appended to it with the
    time.monotonic() at which it arrived: the guest's output is streamed,
    so these are the host's times of the guest's progress.
    """
    proc = subprocess.Popen(cmd, cwd=TOP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, text=True, errors="replace")
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if stamps is not None:
            stamps.append((time.monotonic(), line))
        print(f"# {prefix}{line.rstrip()}", flush=True)
    rc = proc.wait()
    return rc, "".join(lines)


def stage_unit(args, rec):
    ts = time.monotonic()
    rc, out = run_streamed(["make", "--no-print-directory", "unit-c"], "unit: ")
    rec.steps.append(("unit", "make unit-c", time.monotonic() - ts))
    leaves = parse_runner_tap(out)
    if rc != 0 and not any(x.status in ("fail", "error") for x in leaves):
        leaves.append(Leaf("unit tests build and run", "fail", f"make unit-c exited {rc}"))
    if not leaves:
        leaves.append(Leaf("unit tests", "fail", "no unit test ran"))
    ts = time.monotonic()
    xml = os.path.join(TOP, "build", "unit-py.xml")
    if os.path.exists(xml):
        os.remove(xml)
    rc, out = run_streamed(["make", "--no-print-directory", "unit-py",
                            f"PYTEST_ARGS=--junitxml={xml}"], "unit: ")
    rec.steps.append(("unit", "make unit-py", time.monotonic() - ts))
    py = parse_junit(xml)
    if rc != 0 and not any(x.status == "fail" for x in py):
        py.append(Leaf("pytest: host-side unit tests run", "fail", f"make unit-py exited {rc}"))
    if not py:
        py.append(Leaf("pytest: host-side unit tests", "fail", "no test ran"))
    return leaves + py


def stage_static(args, rec):
    leaves = []
    steps = []
    for k in args.kernels:
        # Kbuild compiles the modules' files in parallel, one job per CPU.
        name = release_of(k)
        mk = ["make", "--no-print-directory", f"-j{os.cpu_count() or 1}", kernel_var(k)]
        steps += [(f"{name}: modules build with -Werror", mk + ["modules"]),
                  (f"{name}: sparse C=2 clean", mk + ["sparse"])]
        if kernel_tree(k):
            # DKMS builds for installed kernels (/lib/modules/R/build).
            leaves.append(Leaf(f"{name}: dkms.conf: DKMS builds every module", "skip",
                               f"{k} is a kernel tree, not an installed kernel"))
        else:
            steps.append((f"{name}: dkms.conf: DKMS builds every module", mk + ["dkms-check"]))
    steps += [("selftests build", ["make", "--no-print-directory", "selftests"]),
              ("memhp-count plugin and memhp-mark build with -Werror",
               ["make", "--no-print-directory", "count"]),
              ("checkpatch --strict clean (6.1, 6.12 and 7.3 checkpatch.pl)",
               ["make", "--no-print-directory", "checkpatch"])]
    for name, cmd in steps:
        ts = time.monotonic()
        rc, out = run_streamed(cmd, "static: ")
        rec.steps.append(("static", name, time.monotonic() - ts))
        log(f"time: static {name}: {rec.steps[-1][2]:.1f}s")
        leaves.append(Leaf(name, "pass" if rc == 0 else "fail", "" if rc == 0 else f"exit {rc}"))
    return leaves


def check_tree_config(tree):
    """Before a tree's guests boot: its .config against the fragment. The
    tests a missing option makes skip or fail are listed; a missing
    must-have option is a failed leaf (and no boot)."""
    try:
        with open(os.path.join(tree, ".config")) as f:
            text = f.read()
    except OSError as e:
        return Leaf("kernel config has every option the suite needs", "fail",
                    f"cannot read {tree}/.config: {e.strerror}")
    must, tests = config_gaps(text, fragment_sections())
    for t, missing in sorted(tests.items()):
        log(f"config: {t} will skip or fail: {tree}/.config lacks {' '.join(missing)}")
    if must:
        return Leaf("kernel config has every option the suite needs", "fail",
                    f"{tree}/.config lacks {' '.join(must)} (make kconfig prints the fragment)")
    return Leaf("kernel config has every option the suite needs", "pass", "")


class Record:
    """What the stages measured and said, beside their results: returned
    with them to main(), which reports it."""

    def __init__(self):
        # Per-test wall times of the guest stage: (kernel, test, s, budget).
        self.times = []
        # Per-boot times: (kernel, group label, boot s, whole group s).
        self.boots = []
        # Other timed steps (unit, static): (stage, step, seconds).
        self.steps = []
        # Per-case wall times, from one result line to the next: (test, case, s).
        self.cases = []
        # "figures: ..." diagnostics of the guests: (program, text).
        self.figures = []
        # What memhp-vm said of a failed guest: (label, lines).
        self.vm_failures = []


# A group's guest is killed after the boot allowance (memhp-vm's
# --boot-timeout; --boot-timeout sets another, make check-debug's slower
# kernels) plus GROUP_SLACK times its tests' budgets, at most
# GROUP_TIMEOUT_MAX seconds: a hang fails its group in minutes, not in the
# half hour a whole default group may take. A test without a budget counts
# NO_BUDGET seconds.
BOOT_ALLOWANCE = 300
GROUP_SLACK = 2
GROUP_TIMEOUT_MAX = 1800
NO_BUDGET = 120


def boot_allowance(args):
    """Seconds a group's guest has to start its command."""
    return getattr(args, "boot_timeout", 0) or BOOT_ALLOWANCE


def group_timeout(args, tests):
    """Seconds before the guest of a group running tests is killed."""
    if args.guest_timeout:
        return args.guest_timeout
    budgets = sum(budget_of(t) or NO_BUDGET for t in tests)
    return min(GROUP_TIMEOUT_MAX, boot_allowance(args) + GROUP_SLACK * budgets)


def group_cmd(args, kernel, opts, tests, memhp_vm_opts=()):
    """The memhp-vm command of one guest group: the tests naming the
    memhp-vm options opts, booted from kernel (memhp_vm_opts go before the
    group's own: --print-cmd for the unit tests)."""
    cmd = [MEMHP_VM, "--quiet", "--timeout", str(group_timeout(args, tests)),
           "--boot-timeout", str(boot_allowance(args)), "--kernel", kernel]
    cmd += list(memhp_vm_opts)
    if getattr(args, "qemu", ""):
        cmd += ["--qemu", args.qemu]
    if getattr(args, "reuse_freed_ram", False):
        cmd.append("--reuse-freed-ram")
    if getattr(args, "root_cache", None):
        cmd.append(f"--root-cache={args.root_cache}")
    if args.cpu_features:
        cmd.append(f"--tcg-cpu-features={args.cpu_features}")
    cmd += shlex.split(opts)
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in args.env.items())
    return cmd + ["--", (f"env {env} " if env else "") +
                  "make --no-print-directory -C tools/testing/selftests/memhp "
                  f"OUTPUT={TOP}/build/selftests run_tests T={shlex.quote(' '.join(tests))}"]


def stage_guest(args, kver, kernel, rec):
    """Every selftest group in guests booted from kernel (memhp-vm --kernel:
    an installed release or a bzImage).

    The kernels' guests run one after the other: under TCG a guest's two
    vCPUs are two host threads, and two guests on a 2-core host over-commit
    it (a vCPU spinning on a lock whose holder's thread is not running burns
    the CPU the holder needs), so that each runs far slower than alone.
    """
    leaves = []
    if kernel_tree(kernel):
        leaf = check_tree_config(kernel)
        leaves.append(leaf)
        if leaf.status == "fail":
            return leaves
    if not args.kernel:
        # The modules for this kernel (static built them already, unless
        # --only guest) and the selftests, before any guest boots.
        for cmd in (["make", "-s", "--no-print-directory", kernel_var(kernel), "modules"],
                    ["make", "-s", "--no-print-directory", kernel_var(kernel), "selftests"]):
            rc, _ = run_streamed(cmd, f"guest {kver}: ")
            if rc:
                return [Leaf(f"build for {kver}", "fail", f"{' '.join(cmd[4:])} exit {rc}")]
    tag = series(kver)
    groups = guest_groups(args.tests)
    r = subprocess.run([MEMHP_VM, "--print-accel", "--kernel", kernel], cwd=TOP,
                       capture_output=True, text=True)
    log(f"guest {kver}: accelerator {r.stdout.strip() or '?'}: "
        f"{r.stderr.strip().removeprefix('memhp-vm: ')}")
    for opts, tests in groups.items():
        label = f"{opts or 'default guest'}"
        log(f"guest {kver} [{label}]: {' '.join(tests)}")
        cmd = group_cmd(args, kernel, opts, tests)
        t0 = time.monotonic()
        stamps = []
        rc, out = run_streamed(cmd, f"guest {tag}: ", stamps=stamps)
        group_leaves = parse_runner_tap(out)
        boot, took, cases = guest_times(stamps, t0)
        rec.cases.extend((f"{kver} {p}", c, sec) for p, c, sec in cases)
        total = time.monotonic() - t0
        rec.boots.append((kver, label, boot, total))
        if boot is not None:
            log(f"time: guest {kver} [{label}]: boot {boot:.1f}s")
        for t in tests:
            if t in took:
                budget = budget_of(t)
                rec.times.append((kver, t, took[t], budget))
                over = f", over its budget of {budget}s" if budget and took[t] > budget else ""
                log(f"time: {kver} {t}: {took[t]:.1f}s{over}")
        rec.figures.extend(collect_figures(out, label))
        leaves.extend(group_leaves)
        why = vm_messages(out)
        reason = {0: "", 124: "guest timed out", 125: "guest failed"}.get(rc, f"memhp-vm exit {rc}")
        if rc and why:
            # The cause goes into the result line itself, in full into the
            # failure list at the end: a log cut to its KTAP part keeps it.
            reason += ": " + "; ".join(w.rstrip(":") for w in why[:4])[:400]
            rec.vm_failures.append((f"{kver} [{label}]", why))
        leaves.append(Leaf(f"guest [{label}] boots, runs and keeps a clean kernel log",
                           "pass" if rc == 0 else "fail", reason))
        log(f"guest {kver} [{label}]: {total:.0f}s")
        ran = {leaf.name.split(":")[0] for leaf in group_leaves}
        for t in tests:
            if t not in ran:
                leaves.append(Leaf(t, "fail", "did not report"))
    return leaves


def stage_runner(args, _rec=None):
    # The same QEMU as the guest stage's. Not --reuse-freed-ram: the
    # runner's own tests include the hold it turns off.
    opts = ["--qemu", args.qemu] if getattr(args, "qemu", "") else []
    rc, out = run_streamed([os.path.join(TESTING, "vm", "selftest.sh")] + opts,
                           "runner: ")
    leaves = parse_runner_tap(out)
    if rc not in (0, 1) or not leaves:
        leaves.append(Leaf("runner self-test completes", "fail", f"exit {rc}"))
    return leaves


def time_lines(rec):
    """The boots, the ten slowest tests and cases, and a warning for each
    test over its budget (memhp-budget:)."""
    lines = []
    if rec.boots:
        lines.append("guest boots (boot to first test, whole group):")
        for kver, label, boot, whole in rec.boots:
            b = f"{boot:.0f}s" if boot is not None else "-"
            lines.append(f"  {kver} [{label}]: boot {b}, group {whole:.0f}s")
    if rec.times:
        lines.append("slowest tests (wall seconds in the guest; budget):")
        for kver, test, secs, budget in sorted(rec.times, key=lambda x: -x[2])[:10]:
            lines.append(f"  {secs:7.1f}s  {kver} {test}" + (f" ({budget}s)" if budget else ""))
        lines.append("slowest test cases (from the previous result line of the same test):")
        for test, case, secs in sorted(rec.cases, key=lambda x: -x[2])[:10]:
            lines.append(f"  {secs:7.1f}s  {test}: {case[:90]}")
    lines += budget_warnings(rec.times)
    return lines


def budget_warnings(times):
    """A line for each (kernel, test, seconds, budget) over its budget."""
    return [f"warning: {kver} {test} took {secs:.0f}s, over its budget of {budget}s "
            "(memhp-budget: in the test; Documentation/testing.rst)"
            for kver, test, secs, budget in times if budget and secs > budget]


def times_record(results, total, rec):
    """build/check-times.json's content."""
    return {"total_s": round(total, 1),
            "load_avg": os.getloadavg(),
            "stages": [{"stage": s.name, "pass": s.count("pass"),
                        "fail": s.count("fail", "error"), "skip": s.count("skip"),
                        "seconds": round(s.seconds, 1)} for s in results],
            "steps": [{"stage": st, "step": n, "seconds": round(sec, 1)}
                      for st, n, sec in rec.steps],
            "boots": [{"kernel": k, "group": g, "boot_s": None if b is None else round(b, 1),
                       "group_s": round(w, 1)} for k, g, b, w in rec.boots],
            "tests": [{"kernel": k, "test": t, "seconds": round(sec, 1), "budget_s": bud}
                      for k, t, sec, bud in rec.times],
            "cases": [{"test": t, "case": c, "seconds": round(sec, 1)}
                      for t, c, sec in rec.cases]}


def report_times(results, total, rec):
    """time_lines() as diagnostics, and build/check-times.json."""
    for line in time_lines(rec):
        log(line)
    path = os.path.join(BUILD, "check-times.json")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(times_record(results, total, rec), f, indent=1)
            f.write("\n")
        log(f"times: {os.path.relpath(path, TOP)}")
    except OSError as e:
        log(f"times: could not write {path}: {e}")


STAGES = ["unit", "static", "guest", "runner"]


def parse_args(argv=None):
    """make check's options, checked; --env becomes a dict, --tests,
    --kernels and --guest-kernels lists."""
    p = argparse.ArgumentParser(prog="make check", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--only", default="", help="comma-separated stages (default: all)")
    p.add_argument("--tests", default="", help="comma-separated selftests for the guest stage")
    p.add_argument("--guest-timeout", type=int, default=0,
                   help="seconds before a group's guest is killed (default: from its "
                   "tests' budgets, group_timeout())")
    p.add_argument("--boot-timeout", type=int, default=0,
                   help=f"seconds a group's guest has to start its command (default "
                   f"{BOOT_ALLOWANCE}; a debug kernel under TCG boots slower)")
    p.add_argument("--kernel", default="",
                   help="one bzImage for the guests (make check-debug); modules built with "
                   "KDIR, named by --kernel-release")
    p.add_argument("--kernel-release", default="", help="the release of --kernel")
    p.add_argument("--kernels", default="",
                   help="comma-separated releases, series (tools/kernels.tsv) or kernel "
                   "trees to test, in that order; default: all (make print-kvers)")
    p.add_argument("--guest-kernels", default="",
                   help="of --kernels, the ones whose guest stage runs (same syntax; "
                   "default: all of them): the static stage still builds for every kernel")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set in every guest test's environment (repeatable), e.g. "
                   "SOAK_OPS=1000, FUZZ_RANDOM=5000: the long forms "
                   "(make check-long)")
    p.add_argument("--cpu-features", default=CHECK_CPU_FEATURES, metavar="F=on|off,...",
                   help="memhp-vm --tcg-cpu-features for every guest: applied under TCG only "
                   f"(default: {CHECK_CPU_FEATURES}; \"\" for QEMU's full -cpu max)")
    p.add_argument("--qemu", default="", metavar="PATH",
                   help="memhp-vm --qemu for every guest, the runner stage's too: another "
                   "QEMU system emulator, e.g. make qemu-fixed's build")
    p.add_argument("--reuse-freed-ram", action="store_true",
                   help="memhp-vm --reuse-freed-ram for every guest of the guest stage: no "
                   "hold of freed RAM offsets (for a QEMU that drops stale translations "
                   "itself); the runner stage tests the hold itself")
    p.add_argument("--root-cache", choices=["loose"], default=None,
                   help="memhp-vm --root-cache for every guest of the guest stage (make "
                   "check-debug)")
    args = p.parse_args(argv)
    if args.qemu:
        if not (os.path.isfile(args.qemu) and os.access(args.qemu, os.X_OK)):
            p.error(f"--qemu {args.qemu}: not an executable file")
        args.qemu = os.path.abspath(args.qemu)
    try:
        args.env = parse_env(args.env)
        args.only = [s for s in args.only.split(",") if s]
        unknown = [s for s in args.only if s not in STAGES]
        if unknown:
            raise ValueError(f"--only {','.join(unknown)}: the stages are {', '.join(STAGES)}")
        args.tests = [t for t in args.tests.split(",") if t]
        args.kernels = select_kernels(args.kernels, kernels())
        args.guest_kernels = guest_kernels(args.guest_kernels, args.kernels)
    except ValueError as e:
        p.error(str(e))
    return args


def parse_env(pairs):
    """--env NAME=VALUE... as a dict; ValueError names what is not one."""
    env = {}
    for e in pairs:
        name, sep, value = e.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"--env {e}: want NAME=VALUE, NAME a shell variable name")
        env[name] = value
    return env


def plan(args):
    """[(stage name, fn(args, rec) -> leaves)], in STAGES' order: a guest
    stage per kernel (or for --kernel's bzImage)."""
    fns = {"unit": stage_unit, "static": stage_static, "runner": stage_runner}
    stages = []
    for n in STAGES:
        if args.only and n not in args.only:
            continue
        if n in fns:
            stages.append((n, fns[n]))
        elif args.kernel:
            rel = args.kernel_release or os.path.basename(args.kernel)
            stages.append((f"guest {rel}",
                           lambda a, rec, r=rel: stage_guest(a, r, a.kernel, rec)))
        else:
            for k in args.guest_kernels:
                stages.append((f"guest {release_of(k)}",
                               lambda a, rec, k=k: stage_guest(a, release_of(k), k, rec)))
    return stages


def run_stages(args, stages, rec):
    """Runs each stage, printing it as a KTAP node; [StageResult]."""
    print("KTAP version 1")
    print(f"1..{len(stages)}", flush=True)
    results = []
    for i, (name, fn) in enumerate(stages, 1):
        log(f"stage {name} ...")
        ts = time.monotonic()
        leaves = fn(args, rec)
        results.append(StageResult(name, leaves, time.monotonic() - ts))
        print("\n".join(stage_node(i, results[-1])), flush=True)
    return results


def summary(results, rec):
    """The diagnostics after the stages: what failed (and what memhp-vm
    said of it), the known failures, the tests' figures, the stages."""
    lines = []
    failed = [f"{s.name}: {x.name}" for s in results for x in s.leaves
              if x.status in ("fail", "error")]
    if failed:
        lines += ["failed:"] + [f"  {f}" for f in failed]
    for label, why in rec.vm_failures:
        lines += [f"guest [{label}]: memhp-vm said:"] + [f"  {w}" for w in why[:45]]
    xfail = [f"{s.name}: {x.name} ({x.reason})" for s in results for x in s.leaves
             if x.status == "xfail"]
    if xfail:
        lines += ["known failures (XFAIL, documented, not counted as passed):"]
        lines += [f"  {f}" for f in xfail]
    if rec.figures:
        lines += ["figures reported by the tests:"]
        lines += [f"  {prog}: {fig}" for prog, fig in rec.figures]
    lines.append("per stage (pass/fail/skip, seconds):")
    lines += [f"  {s.name}: {s.count('pass')}/{s.count('fail', 'error')}/{s.count('skip')}, "
              f"{s.seconds:.0f}s" for s in results]
    return lines


def main(argv=None):
    """make check: the exit status, 0 only when nothing failed."""
    args = parse_args(argv)
    if args.qemu:
        log(f"guest QEMU: {args.qemu}")
    if args.reuse_freed_ram:
        log("guests reuse freed RAM offsets: no hold (memhp-vm --reuse-freed-ram)")
    if args.env:
        log("guest environment: " + " ".join(f"{k}={v}" for k, v in args.env.items()))
    t0 = time.monotonic()
    rec = Record()
    results = run_stages(args, plan(args), rec)
    for line in summary(results, rec):
        log(line)
    report_times(results, time.monotonic() - t0, rec)
    log(f"make check took {time.monotonic() - t0:.0f}s")
    t = totals(results)
    print("\n".join(totals_lines(t)), flush=True)
    return 1 if t["fail"] or t["error"] else 0
