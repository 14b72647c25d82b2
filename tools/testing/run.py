#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make run: build, boot, run every experiment, print and save the report.

Each experiment is a directory tools/testing/experiments/<NN-name>/ with:
  vm-args  (optional) memhp-vm options for its guest, one line
  guest    (optional) run as root in the guest; MEMHP_TOP and MEMHP_OUT set
  host     (optional) run on the host afterwards; writes MEMHP_OUT/summary.md
Results go to results/<NN-name>/; results/report.md collects the summaries.
"""

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import time

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXPERIMENTS = os.path.join(TOP, "tools", "testing", "experiments")
RESULTS = os.path.join(TOP, "results")
MEMHP_VM = os.path.join(TOP, "tools", "testing", "vm", "memhp-vm")


def say(msg):
    print(f"[make run {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def experiments():
    for name in sorted(os.listdir(EXPERIMENTS)):
        path = os.path.join(EXPERIMENTS, name)
        if os.path.isdir(path) and (os.path.exists(os.path.join(path, "guest")) or
                                    os.path.exists(os.path.join(path, "host"))):
            yield name, path


def stream(cmd, env, prefix):
    proc = subprocess.Popen(cmd, cwd=TOP, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, errors="replace")
    for line in proc.stdout:
        print(f"  {prefix}| {line.rstrip()}", flush=True)
    return proc.wait()


def run_one(name, path, args):
    out = os.path.join(RESULTS, name)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, MEMHP_TOP=TOP, MEMHP_OUT=out)
    env["PATH"] = os.path.join(TOP, ".venv", "bin") + os.pathsep + env.get("PATH", "")
    guest = os.path.join(path, "guest")
    if os.path.exists(guest):
        vm_args = []
        try:
            with open(os.path.join(path, "vm-args")) as f:
                vm_args = shlex.split(f.read())
        except OSError:
            pass
        say(f"{name}: guest {' '.join(vm_args)}")
        cmd = [MEMHP_VM, "--timeout", str(args.guest_timeout)] + vm_args + \
              ["--", f"MEMHP_OUT={shlex.quote(out)} {shlex.quote(guest)}"]
        rc = stream(cmd, env, "guest")
        if rc:
            return f"guest part failed (memhp-vm exit {rc})"
    host = os.path.join(path, "host")
    if os.path.exists(host):
        say(f"{name}: host part")
        rc = stream([host], env, "host ")
        if rc:
            return f"host part failed (exit {rc})"
    if not os.path.exists(os.path.join(out, "summary.md")):
        return "no summary.md written"
    return None


def main():
    p = argparse.ArgumentParser(prog="make run", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--only", default="", help="comma-separated experiments (names or NN prefixes)")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument("--guest-timeout", type=int, default=3600)
    args = p.parse_args()

    exps = list(experiments())
    if args.list:
        for name, _ in exps:
            print(name)
        return
    if args.only:
        wanted = args.only.split(",")
        exps = [(n, pth) for n, pth in exps if any(n == w or n.startswith(w) for w in wanted)]
        if not exps:
            p.error("no such experiment (see --list)")

    say("building modules and selftest helpers")
    if subprocess.run(["make", "-s", "--no-print-directory", "selftests"], cwd=TOP).returncode:
        sys.exit("make run: build failed")

    t0 = time.monotonic()
    failures = {}
    for i, (name, path) in enumerate(exps, 1):
        say(f"experiment {i}/{len(exps)}: {name}")
        ts = time.monotonic()
        err = run_one(name, path, args)
        if err:
            failures[name] = err
            say(f"{name}: FAILED: {err}")
        else:
            say(f"{name}: done in {time.monotonic() - ts:.0f}s")

    kver = subprocess.run(["make", "-s", "--no-print-directory", "-f", os.path.join(TOP, "Makefile"),
                           "print-kver"], cwd=TOP, capture_output=True, text=True).stdout.strip()
    report = [f"# memhp-lab results\n",
              f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
              f"- guest kernel: {kver or 'Debian 6.1'} under QEMU (see each experiment's accel)",
              f"- host: {platform.node()}, {os.cpu_count()} CPUs, {platform.release()}",
              f"- experiments: {len(exps)}, failed: {len(failures)}\n"]
    for name, _ in exps:
        summary = os.path.join(RESULTS, name, "summary.md")
        if name in failures:
            report.append(f"## {name}\n\nFAILED: {failures[name]}\n")
        elif os.path.exists(summary):
            with open(summary) as f:
                text = f.read()
            # Figures are linked relative to the experiment's directory.
            text = text.replace("](", f"]({name}/").replace(f"]({name}/http", "](http")
            report.append(text)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "report.md"), "w") as f:
        f.write("\n".join(report) + "\n")

    print()
    print("\n".join(report))
    say(f"report: results/report.md ({time.monotonic() - t0:.0f}s)")
    if failures:
        say(f"failed: {', '.join(failures)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
