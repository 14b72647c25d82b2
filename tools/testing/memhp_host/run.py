# SPDX-License-Identifier: GPL-2.0
"""make run: build, boot, run every experiment on every kernel, compare them.

Each experiment is a directory tools/testing/experiments/<NN-name>/ with:
  vm-args  (optional) memhp-vm options for its guest, one line
  guest    (optional) run as root in the guest; MEMHP_TOP and MEMHP_OUT set
  opt-in   (optional) one line, why: run only when named (--only) or with --full
  host     (optional) run on the host afterwards; writes MEMHP_OUT/summary.md
           (MEMHP_KVER: the guest's kernel release)
  count    (optional) says the guest marks phases (memhp-mark): with
           --count auto its guest runs with memhp-vm --count and the
           phases' instruction counts end its summary.md (--count on: every
           guest). auto is the default where guests run under TCG anyway
           (no usable /dev/kvm); with KVM the default is off, since the
           plugin needs TCG. The times of a counted guest are taken under
           the plugin (slower, and a marked write includes the marker
           process's start); --count off (make run COUNT=0) times without it
  count-ratios (optional) lines "PHASE BASE": the counts table is followed
           by PHASE / BASE for each (all vCPUs: medians, and min over min)
Every experiment runs on every kernel of `make print-kvers`
(tools/kernels.tsv; --kernels picks), the kernels one after the other for each
experiment, so all see the same host load. Results go to results/<release>/<NN-name>/;
results/report.md starts with the kernels side by side (every markdown table
of the first kernel's summaries beside the same table of each other kernel,
rows joined by their leading label cells, each numeric column as first |
other | other/first), then each kernel's own summaries.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

from . import BUILD, EXPERIMENTS, MEMHP_VM, RESULTS, TOP, VENV
from .check import parse_env
from .kernels import kernel_var, kernels, release_of, select_kernels, series
from .report import Runs, append_counts, render_report


def say(msg):
    print(f"[make run {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def experiments():
    for name in sorted(os.listdir(EXPERIMENTS)):
        path = os.path.join(EXPERIMENTS, name)
        if os.path.isdir(path) and (os.path.exists(os.path.join(path, "guest")) or
                                    os.path.exists(os.path.join(path, "host"))):
            yield name, path


PEAK_RSS_RE = re.compile(r"^memhp-vm: exit -?\d+ after \d+s, QEMU peak RSS (\d+) MiB")


def stream(cmd, env, prefix, seen=None):
    """Runs cmd, its output indented; (rc, seconds to its first own line).

    The first line that is not memhp-vm's own (memhp-vm: ...) is the guest
    script's: the time until then is the guest's boot. memhp-vm's QEMU peak
    RSS, when it prints one, goes to seen["qemu_rss_mib"].
    """
    t0 = time.monotonic()
    first = None
    proc = subprocess.Popen(cmd, cwd=TOP, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, errors="replace")
    for line in proc.stdout:
        if first is None and line.strip() and not line.startswith("memhp-vm:"):
            first = time.monotonic() - t0
        m = PEAK_RSS_RE.match(line)
        if m and seen is not None:
            seen["qemu_rss_mib"] = int(m.group(1))
        print(f"  {prefix}| {line.rstrip()}", flush=True)
    return proc.wait(), first


def vm_args_of(path):
    """An experiment's memhp-vm options (its vm-args file), as a list."""
    try:
        with open(os.path.join(path, "vm-args")) as f:
            return shlex.split(f.read())
    except OSError:
        return []


def guest_cmd(path, kver, out, args, memhp_vm_opts=()):
    """The memhp-vm command of an experiment's guest part (memhp_vm_opts
    go first: --print-cmd for the unit tests)."""
    assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in args.env.items())
    guest = os.path.join(path, "guest")
    counting = args.count == "on" or (args.count == "auto" and
                                      os.path.exists(os.path.join(path, "count")))
    count = ["--count", os.path.join(out, "count.json")] if counting else []
    return [MEMHP_VM, "--timeout", str(args.guest_timeout), "--kernel", kver] + \
        list(memhp_vm_opts) + vm_args_of(path) + count + \
        ["--", f"{assigns} MEMHP_OUT={shlex.quote(out)} {shlex.quote(guest)}".strip()]


def run_one(name, path, kver, args, part):
    """One experiment on one kernel: its guest part, then its host part.
    The wall seconds of each part (boot, guest, host) and QEMU's peak RSS
    go into part; returns None, or why it failed."""
    out = os.path.join(RESULTS, release_of(kver), name)
    os.makedirs(out, exist_ok=True)
    stale = ["summary.md"]
    if os.path.exists(os.path.join(path, "guest")):
        stale += ["count.json", "count.json.kallsyms", "count.json.syms",
                  "count-report.json", "count-units"]
    for f in stale:
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    env = dict(os.environ, MEMHP_TOP=TOP, MEMHP_OUT=out, MEMHP_KVER=release_of(kver))
    env.update(args.env)
    env["PATH"] = os.path.join(VENV, "bin") + os.pathsep + env.get("PATH", "")
    tag = series(kver)
    if os.path.exists(os.path.join(path, "guest")):
        say(f"{name} [{kver}]: guest {' '.join(vm_args_of(path))}")
        ts = time.monotonic()
        rc, part["boot"] = stream(guest_cmd(path, kver, out, args), env, f"{tag:>4} guest", part)
        part["guest"] = time.monotonic() - ts
        if rc:
            return f"guest part failed (memhp-vm exit {rc})"
    host = os.path.join(path, "host")
    if os.path.exists(host):
        say(f"{name} [{kver}]: host part")
        ts = time.monotonic()
        rc, _ = stream([host], env, f"{tag:>4} host ")
        part["host"] = time.monotonic() - ts
        if rc:
            return f"host part failed (exit {rc})"
    if not os.path.exists(os.path.join(out, "summary.md")):
        return "no summary.md written"
    if os.path.exists(os.path.join(out, "count.json")):
        return append_counts(out, os.path.join(path, "count-ratios"))
    return None


def time_rows(kvers, exps, runs):
    """Per experiment and kernel: boot, guest, host and in all (seconds)."""
    rows = []
    for name, _ in exps:
        for k in kvers:
            if (k, name) in runs.took:
                part = runs.parts.get((k, name), {})
                rows.append({"kernel": k, "experiment": name, "boot_s": part.get("boot"),
                             "guest_s": part.get("guest"), "host_s": part.get("host"),
                             "total_s": runs.took[(k, name)]})
    return rows


def report_times(kvers, exps, runs, total):
    """time_rows() said, and written to build/run-times.json."""
    say("time per experiment (seconds: guest boot, guest part, host part, in all):")
    per_kernel = {}
    rows = time_rows(kvers, exps, runs)
    for r in rows:
        per_kernel[r["kernel"]] = per_kernel.get(r["kernel"], 0) + r["total_s"]
        cells = (r["boot_s"], r["guest_s"], r["host_s"], r["total_s"])
        say(f"  {r['experiment']:<20} {series(r['kernel']):>5}: " + "  ".join(
            f"{c:6.0f}" if c is not None else "     -" for c in cells))
    for k, secs in per_kernel.items():
        say(f"  {k}: {secs:.0f}s in all")
    path = os.path.join(BUILD, "run-times.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"total_s": total, "per_kernel_s": per_kernel, "runs": rows}, f, indent=1)
        f.write("\n")
    say(f"times: {os.path.relpath(path, TOP)}")


def parse_args(argv=None):
    """make run's options, checked: --env a dict (with MEMHP_FULL=1 for
    --full), --only a list."""
    p = argparse.ArgumentParser(prog="make run", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--only", default="", help="comma-separated experiments (names or NN prefixes)")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument("--kernels", default="",
                   help="comma-separated releases, series (tools/kernels.tsv) or kernel "
                   "trees; default: all (make print-kvers); the first is the base of the "
                   "ratios")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set in every guest and host part (repeatable), e.g. CYCLES=2, "
                   "ROUNDS=6, REPS=3, SEEDS=5: fewer repetitions")
    p.add_argument("--full", action="store_true",
                   help="the long form: every experiment at its full repetitions "
                   "(MEMHP_FULL=1 in every guest and host part; make run FULL=1)")
    p.add_argument("--count", choices=["off", "auto", "on"], default=None,
                   help="count guest instructions (memhp-vm --count, TCG): every phase an "
                   "experiment marks gets an instruction table in its summary; auto: the "
                   "experiments with a count file (the default without KVM; make run "
                   "COUNT=1), on: every guest, off: none (make run COUNT=0; the default "
                   "where /dev/kvm is usable, since counting needs TCG)")
    p.add_argument("--report-only", action="store_true",
                   help="no runs: rebuild results/report.md from the results there")
    p.add_argument("--guest-timeout", type=int, default=3600)
    args = p.parse_args(argv)
    args.count_why = f"--count {args.count}" if args.count else ""
    if args.list:
        return args
    try:
        args.env = parse_env(args.env)
        args.exps = select_experiments(args.only, args.full)
        args.kernels = select_kernels(args.kernels, kernels())
    except ValueError as e:
        p.error(str(e))
    if args.full:
        args.env.setdefault("MEMHP_FULL", "1")
    return args


def select_experiments(only, full, available=None):
    """[(name, path)] of --only (names or NN prefixes, in the tree's
    order); none named: all but the opt-in ones, unless full."""
    exps = list(experiments()) if available is None else available
    if only:
        wanted = only.split(",")
        exps = [(n, p) for n, p in exps if any(n == w or n.startswith(w) for w in wanted)]
        if not exps:
            raise ValueError(f"--only {only}: no such experiment (see --list)")
        return exps
    if full:
        return exps
    # An experiment with an opt-in file (its cost, one line) runs only
    # when named (--only) or in the long form (--full).
    return [(n, p) for n, p in exps if not os.path.exists(os.path.join(p, "opt-in"))]


def default_count(kernel):
    """(--count, why) when none was given: counting needs TCG, so on only
    where guests get TCG anyway."""
    r = subprocess.run([MEMHP_VM, "--print-accel", "--quiet", "--kernel", kernel],
                       capture_output=True, text=True)
    kvm = r.returncode == 0 and r.stdout.strip() == "kvm"
    return ("off", "the default with KVM") if kvm else ("auto", "the default under TCG")


def build(kvers):
    """The modules for each kernel and the selftest helpers; None, or what
    failed."""
    for k in kvers:
        say(f"building modules for {k}")
        if subprocess.run(["make", "-s", "--no-print-directory", kernel_var(k), "modules"],
                          cwd=TOP).returncode:
            return f"module build for {k} failed"
    say("building selftest helpers")
    if subprocess.run(["make", "-s", "--no-print-directory", "selftests"], cwd=TOP).returncode:
        return "build failed"
    return None


def run_all(args, kvers):
    """Every experiment on every kernel, the kernels alternating per
    experiment; Runs."""
    runs = Runs(args.env, (args.count, args.count_why))
    for i, (name, path) in enumerate(args.exps, 1):
        for k in kvers:
            say(f"experiment {i}/{len(args.exps)}: {name} on {k}")
            ts, la0 = time.monotonic(), os.getloadavg()[0]
            part = runs.parts.setdefault((k, name), {})
            err = run_one(name, path, k, args, part)
            runs.took[(k, name)] = time.monotonic() - ts
            runs.load[(k, name)] = (la0, os.getloadavg()[0])
            if "qemu_rss_mib" in part:
                runs.rss[(k, name)] = part["qemu_rss_mib"]
            if err:
                runs.failures[(k, name)] = err
                say(f"{name} [{k}]: FAILED: {err}")
            else:
                say(f"{name} [{k}]: done in {runs.took[(k, name)]:.0f}s")
    return runs


def stored_runs(path, args):
    """--report-only: the Runs of the last make run (run.json); when there
    is none, said, empty ones with this command line's env and --count. A
    run.json that cannot be read is an error (ValueError, OSError), never
    a report without its failures."""
    try:
        return Runs.load(path)
    except FileNotFoundError:
        say(f"{path}: none, so this report has no times and no failures of the runs")
        count = (args.count, args.count_why) if args.count else ("off", "not recorded")
        return Runs(args.env, count)


def main(argv=None):
    """make run: the exit status, 1 when an experiment failed."""
    args = parse_args(argv)
    if args.list:
        print("\n".join(name for name, _ in experiments()))
        return 0
    t0 = time.monotonic()
    meta = os.path.join(RESULTS, "run.json")
    if args.report_only:
        try:
            runs = stored_runs(meta, args)
        except (OSError, ValueError) as e:
            sys.exit(f"run: --report-only: {e}")
    else:
        if args.count is None:
            args.count, args.count_why = default_count(args.kernels[0])
        err = build(args.kernels)
        if err:
            sys.exit(f"make run: {err}")
        runs = run_all(args, args.kernels)
        runs.save(meta)
    text = render_report(args.kernels, args.exps, runs)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "report.md"), "w") as f:
        f.write(text)
    print("\n" + text, end="")
    if runs.took and not args.report_only:
        report_times(args.kernels, args.exps, runs, time.monotonic() - t0)
    say(f"report: results/report.md ({time.monotonic() - t0:.0f}s)")
    if runs.failures:
        say("failed: " + ", ".join(f"{n} on {k}" for k, n in runs.failures))
        return 1
    return 0
