#!/usr/bin/env python3
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
import datetime
import fnmatch
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections import Counter
from statistics import median

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


from memhp_common import kernel_var, kernels, release_of, select_kernels, series  # noqa: E402


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


# Wall seconds of each run: (kernel, experiment) -> {boot, guest, host}.
PARTS = {}


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


def run_one(name, path, kver, args):
    out = os.path.join(RESULTS, release_of(kver), name)
    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, "summary.md")):
        os.remove(os.path.join(out, "summary.md"))
    env = dict(os.environ, MEMHP_TOP=TOP, MEMHP_OUT=out, MEMHP_KVER=release_of(kver))
    env.update(args.env)
    env["PATH"] = os.path.join(TOP, ".venv", "bin") + os.pathsep + env.get("PATH", "")
    tag = series(kver)
    guest = os.path.join(path, "guest")
    if os.path.exists(guest):
        for stale in ("count.json", "count.json.kallsyms", "count.json.syms",
                      "count-report.json", "count-units"):
            if os.path.exists(os.path.join(out, stale)):
                os.remove(os.path.join(out, stale))
        cmd = guest_cmd(path, kver, out, args)
        say(f"{name} [{kver}]: guest {' '.join(vm_args_of(path))}")
        ts = time.monotonic()
        part = PARTS.setdefault((kver, name), {})
        rc, boot = stream(cmd, env, f"{tag:>4} guest", part)
        part.update(guest=time.monotonic() - ts, boot=boot)
        if rc:
            return f"guest part failed (memhp-vm exit {rc})"
    host = os.path.join(path, "host")
    if os.path.exists(host):
        say(f"{name} [{kver}]: host part")
        ts = time.monotonic()
        rc, _ = stream([host], env, f"{tag:>4} host ")
        PARTS.setdefault((kver, name), {})["host"] = time.monotonic() - ts
        if rc:
            return f"host part failed (exit {rc})"
    if not os.path.exists(os.path.join(out, "summary.md")):
        return "no summary.md written"
    if os.path.exists(os.path.join(out, "count.json")):
        return append_counts(out, os.path.join(path, "count-ratios"))
    return None


COUNT_REPORT = os.path.join(TOP, "tools", "testing", "count", "memhp-count-report")


def count_ratios(by_name, spec):
    """Markdown lines of PHASE / BASE for each "PHASE BASE" line of the file
    spec (all-vCPU kernel instructions: the medians' ratio, the minimums'
    ratio, and whether the two min-max ranges overlap), [] without it."""
    try:
        with open(spec) as f:
            pairs = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
    except OSError:
        return []
    rows = []
    for pair in pairs:
        if len(pair) != 2 or not all(p in by_name for p in pair):
            continue
        a, b = (sorted(ph["kernel"] for ph in by_name[p]) for p in pair)
        rows.append(f"| {pair[0]} / {pair[1]} | {median(a) / median(b):.3f} | "
                    f"{a[0] / b[0]:.3f} | {'yes' if a[0] <= b[-1] and b[0] <= a[-1] else 'no'} |")
    if not rows:
        return []
    return ["", "All vCPUs' kernel instructions, phase against phase (ranges overlap: no "
            "means the difference exceeds the spread of both):", "",
            "| phases | median / median | min / min | ranges overlap |", "|---|---|---|---|"] + rows


def append_counts(out, ratios=""):
    """The marked phases' instruction counts, as a table at the end of summary.md.

    One row per phase name: how often it ran; the guest kernel's
    instructions per run on the vCPU that marked it (runs that began and
    ended on one vCPU: the operation itself and the interrupts that vCPU
    took), median; on all vCPUs (background work included), median, min
    and max, and their spread (max - min) / median; the host wall time
    per run, median; and the function with most instructions. Where the
    guest wrote count-units (count_per in experiments/lib.sh: lines
    "PATTERN AMOUNT UNIT", the first whose shell pattern matches a phase
    name is its), also the all-vCPU median per UNIT.
    """
    path = os.path.join(out, "count.json")
    if not os.path.exists(path):
        return "memhp-vm --count wrote no count.json"
    r = subprocess.run([COUNT_REPORT, "--json", "--top", "3", path], capture_output=True, text=True)
    if r.returncode:
        return f"memhp-count-report failed: {r.stderr.strip()}"
    with open(os.path.join(out, "count-report.json"), "w") as f:
        f.write(r.stdout)
    rep = json.loads(r.stdout)
    by_name = {}
    for ph in rep["phases"]:
        by_name.setdefault(ph["name"], []).append(ph)
    if not by_name and not (rep["unbalanced_marks"] or rep["bad_marks"] or rep["open_phase"]):
        return None     # nothing marked (or not applicable on this kernel)
    units = []
    try:
        with open(os.path.join(out, "count-units")) as f:
            for line in f:
                w = line.split()
                if len(w) == 3 and w[1].isdigit() and int(w[1]) > 0:
                    units.append((w[0], int(w[1]), w[2]))
    except OSError:
        pass
    lines = ["", "### Instruction counts (memhp-count, exact)", "",
             "Guest kernel instructions per marked operation (memhp-vm --count): on the vCPU "
             "that marked it, and on all vCPUs; host wall time under counting. "
             "Documentation/admin-guide/counting.rst says what the figures include.", "",
             "| phase | runs | marking vCPU kernel instr | all vCPUs kernel instr | min | max | "
             "spread % | all vCPUs per unit | unit | wall ms | top function |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, phs in by_name.items():
        k = sorted(ph["kernel"] for ph in phs)
        own = [ph["marking_vcpu_counts"]["kernel"] for ph in phs if ph["marking_vcpu_counts"]]
        med = median(k)
        spread = 100 * (k[-1] - k[0]) / med if med else 0
        top = Counter()
        for ph in phs:
            for fn, n in ph["functions"][:1]:
                top[fn] += n
        unit = next(((n, u) for pat, n, u in units if fnmatch.fnmatchcase(name, pat)), None)
        per = "-" if not unit else f"{med / unit[0]:.1f}" if med / unit[0] < 100 else \
            f"{med / unit[0]:.0f}"
        lines.append(f"| {name} | {len(k)} | {f'{median(own):.0f}' if own else '-'} | {med:.0f} | {k[0]} | "
                     f"{k[-1]} | {spread:.1f} | {per} | {unit[1] if unit else '-'} | "
                     f"{median([ph['wall_ms'] for ph in phs]):.1f} | "
                     f"{top.most_common(1)[0][0] if top else '-'} |")
    lines += count_ratios(by_name, ratios)
    if rep["unbalanced_marks"] or rep["bad_marks"] or rep["open_phase"]:
        lines.append(f"\nMarker problems: {rep['unbalanced_marks']} unbalanced, "
                     f"{rep['bad_marks']} bad, open phase {rep['open_phase']}.")
    with open(os.path.join(out, "summary.md"), "a") as f:
        f.write("\n".join(lines) + "\n")
    return None


# --- the side-by-side comparison -------------------------------------------

NUM = re.compile(r"^\s*([-+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?)\s*(x|%)?\s*(\([^()]*\))?\s*$", re.I)


def num(cell):
    """The value of a numeric cell (12, 1.5, 0.93x, 97.5%, 13.0 (1.00x)), else None."""
    m = NUM.match(cell.replace("*", ""))
    return float(m.group(1)) if m else None


def md_tables(text):
    """The markdown tables of a summary: [(heading, header cells, rows)]."""
    tables, heading, lines = [], "", text.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("#"):
            heading = ln.lstrip("#").strip()
        if (ln.startswith("|") and i + 1 < len(lines) and
                re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]) and "-" in lines[i + 1]):
            head = [c.strip() for c in ln.strip().strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            tables.append((heading, head, rows))
            continue
        i += 1
    return tables


def key_len(tables_rows, ncols):
    """How many leading cells name a row: every leading non-numeric cell, at
    least one, and more (numeric ones too: a block, a span) until the rows of
    each kernel's table are unique."""
    n = 1
    for rows in tables_rows:
        for r in rows:
            k = 0
            while k < len(r) and num(r[k]) is None:
                k += 1
            n = max(n, k)
    while n < ncols and any(len({tuple(r[:n]) for r in rows}) < len(rows) for rows in tables_rows):
        n += 1
    return n


def fmt(v):
    if v is None:
        return "-"
    if v == int(v):
        return f"{int(v)}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}" if abs(v) >= 0.1 else f"{v:.3g}"


from memhp_common import ratio  # noqa: E402


def md(head, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def min_max_pairs(head):
    """(low, high) column pairs of a header: 'min ms'/'max ms', 'min %'/'max %',
    'interval low'/'interval high'."""
    pairs = []
    for i, h in enumerate(head):
        if h.lower().endswith(" low") and h[:-4] + " high" in head:
            pairs.append((i, head.index(h[:-4] + " high")))
        if h.lower().startswith("min"):
            want = "max" + h[3:]
            for j, h2 in enumerate(head):
                if h2.lower() == want.lower():
                    pairs.append((i, j))
    return pairs


def compare_table(head, a_rows, b_rows, la, lb):
    """One table of two kernels side by side; None if nothing numeric."""
    nk = key_len([a_rows, b_rows], len(head))
    a = {tuple(r[:nk]): r for r in a_rows}
    b = {tuple(r[:nk]): r for r in b_rows}
    keys = list(dict.fromkeys([tuple(r[:nk]) for r in a_rows] + [tuple(r[:nk]) for r in b_rows]))
    numeric, same = [], []
    for c in range(nk, len(head)):
        va = [num(r[c]) if c < len(r) else None for r in a_rows]
        vb = [num(r[c]) if c < len(r) else None for r in b_rows]
        if not any(v is not None for v in va + vb):
            continue
        eq = all((a.get(k) or [None] * len(head))[c:c + 1] == (b.get(k) or [None] * len(head))[c:c + 1]
                 for k in keys)
        (same if eq else numeric).append(c)
    if not numeric:
        return None, same
    pairs = [(i, j) for i, j in min_max_pairs(head) if i in numeric or j in numeric]
    h = head[:nk]
    for c in numeric:
        h += [f"{head[c]} {la}", f"{head[c]} {lb}", f"{lb}/{la}"]
    for i, j in pairs:
        h.append(f"{head[i][:-4]} overlap" if head[i].endswith(" low") else
                 f"{head[i][3:].strip() or 'min-max'} ranges overlap")
    rows = []
    for k in keys:
        ra, rb = a.get(k), b.get(k)
        row = list(k)
        for c in numeric:
            x = num(ra[c]) if ra and c < len(ra) else None
            y = num(rb[c]) if rb and c < len(rb) else None
            row += [fmt(x) if ra else "(absent)", fmt(y) if rb else "(absent)", ratio(x, y)]
        for i, j in pairs:
            try:
                lo_a, hi_a, lo_b, hi_b = num(ra[i]), num(ra[j]), num(rb[i]), num(rb[j])
                row.append("yes" if lo_a <= hi_b and lo_b <= hi_a else
                           ("**no**: " + (lb if hi_b < lo_a else la) + " lower"))
            except (TypeError, IndexError):
                row.append("-")
        rows.append(row)
    return md(h, rows), [head[c] for c in same]


def compare(name, kvers):
    """The comparison section of one experiment, oldest kernel vs each newer."""
    texts = {}
    for k in kvers:
        try:
            with open(os.path.join(RESULTS, release_of(k), name, "summary.md")) as f:
                texts[k] = f.read()
        except OSError:
            pass
    out = [f"### {name}\n"]
    if len(texts) < 2:
        have = ", ".join(texts) or "none"
        out.append(f"No comparison: summaries from {have}.\n")
        return "\n".join(out)
    base = kvers[0]
    for other in kvers[1:]:
        if base not in texts or other not in texts:
            continue
        la, lb = series(base), series(other)
        ta, tb = md_tables(texts[base]), md_tables(texts[other])
        # Tables are matched by heading and header row, in order.
        used = set()
        for idx, (heading, head, rows) in enumerate(ta):
            match = next((j for j, (h2, hd2, _) in enumerate(tb)
                          if j not in used and h2 == heading and hd2 == head), None)
            if match is None:
                out.append(f"Table {idx + 1} ({heading}): only on {la}.\n")
                continue
            used.add(match)
            table, same = compare_table(head, rows, tb[match][2], la, lb)
            nth = sum(1 for h, _, _ in ta[:idx] if h == heading)
            title = (heading or "table") + (f", table {nth + 1}" if nth else "")
            if table is None:
                out.append(f"*{title}*: no numeric column differs between {la} and {lb}.\n")
                continue
            out.append(f"*{title}* ({lb}/{la}: ratio of the {lb} figure to the {la} one)\n")
            out.append(table)
            if same:
                out.append(f"Equal on both kernels: {', '.join(same)}.\n")
        for j, (heading, head, rows) in enumerate(tb):
            if j not in used:
                out.append(f"Table ({heading}): only on {lb}.\n")
    return "\n".join(out)


def load_run_meta(path):
    """run.json of the last make run -> (env, [count, why], took, load, rss,
    failures), the dicts keyed by (kernel, experiment). OSError when it
    cannot be read; ValueError, naming the file, when it does not parse or
    lacks what a run writes."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        m = json.loads(text)
        env = dict(m["env"])
        count = list(m.get("count", ["off", "not recorded in its run.json"]))
        took = {(k, n): float(t) for k, n, t in m["took"]}
        load = {(k, n): tuple(x) for k, n, x in m.get("load", [])}
        rss = {(k, n): x for k, n, x in m.get("qemu_rss_mib", [])}
        failures = {(k, n): e for k, n, e in m["failures"]}
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a run.json of make run ({type(e).__name__}: {e})") from e
    return env, count, took, load, rss, failures


def host_mem_mib():
    """The host's MemTotal in MiB (0 where /proc/meminfo does not say)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def report_times(kvers, exps, took, total):
    """Per experiment and kernel: boot, guest, host, all; build/run-times.json."""
    say("time per experiment (seconds: guest boot, guest part, host part, in all):")
    per_kernel = {}
    rows = []
    for name, _ in exps:
        for k in kvers:
            if (k, name) not in took:
                continue
            part = PARTS.get((k, name), {})
            cells = [part.get("boot"), part.get("guest"), part.get("host"), took[(k, name)]]
            per_kernel[k] = per_kernel.get(k, 0) + took[(k, name)]
            say(f"  {name:<20} {series(k):>5}: " + "  ".join(
                f"{c:6.0f}" if c is not None else "     -" for c in cells))
            rows.append({"kernel": k, "experiment": name,
                         "boot_s": part.get("boot"), "guest_s": part.get("guest"),
                         "host_s": part.get("host"), "total_s": took[(k, name)]})
    for k, secs in per_kernel.items():
        say(f"  {k}: {secs:.0f}s in all")
    path = os.path.join(TOP, "build", "run-times.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"total_s": total, "per_kernel_s": per_kernel, "runs": rows}, f, indent=1)
        f.write("\n")
    say(f"times: {os.path.relpath(path, TOP)}")


def recorded_accels(kvers, exps):
    """The accelerators the guests of these results ran under, from each
    experiment's accel file (record_accel): "TCG", "KVM", or both with
    the experiments of each."""
    seen = {}
    for k in kvers:
        for name, _ in exps:
            try:
                with open(os.path.join(RESULTS, release_of(k), name, "accel")) as f:
                    a = f.read().strip().upper()
            except OSError:
                continue
            seen.setdefault(a, []).append(f"{name} [{series(k)}]")
    if not seen:
        return "(no experiment recorded its accelerator)"
    if len(seen) == 1:
        return next(iter(seen))
    return "; ".join(f"{a}: {', '.join(v)}" for a, v in sorted(seen.items()))


def main():
    p = argparse.ArgumentParser(prog="make run", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--only", default="", help="comma-separated experiments (names or NN prefixes)")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument("--kernels", default="",
                   help="comma-separated releases or series (tools/kernels.tsv); default: "
                   "all (make print-kvers); the first is the base of the ratios")
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
    args = p.parse_args()
    try:
        args.env = dict(e.split("=", 1) for e in args.env)
    except ValueError:
        p.error("--env takes NAME=VALUE")
    if args.full:
        args.env.setdefault("MEMHP_FULL", "1")

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
    elif not args.full:
        # An experiment with an opt-in file (its cost, one line) runs only
        # when named (--only) or in the long form (--full).
        exps = [(n, pth) for n, pth in exps if not os.path.exists(os.path.join(pth, "opt-in"))]
    try:
        kvers = select_kernels(args.kernels, kernels())
    except ValueError as e:
        p.error(str(e))

    count_why = f"--count {args.count}"
    if args.count is None and not args.report_only:
        # Counting needs TCG: on by default only where guests get TCG anyway.
        r = subprocess.run([MEMHP_VM, "--print-accel", "--quiet", "--kernel", kvers[0]],
                           capture_output=True, text=True)
        kvm = r.returncode == 0 and r.stdout.strip() == "kvm"
        args.count = "off" if kvm else "auto"
        count_why = "the default with KVM" if kvm else "the default under TCG"

    t0 = time.monotonic()
    failures = {}
    took = {}
    load = {}  # 1-minute load average at the start and the end of each run
    rss = {}  # QEMU's peak resident set of each run's guest, MiB
    if not args.report_only:
        for k in kvers:
            say(f"building modules for {k}")
            if subprocess.run(["make", "-s", "--no-print-directory", kernel_var(k), "modules"],
                              cwd=TOP).returncode:
                sys.exit(f"make run: module build for {k} failed")
        say("building selftest helpers")
        if subprocess.run(["make", "-s", "--no-print-directory", "selftests"], cwd=TOP).returncode:
            sys.exit("make run: build failed")
        for i, (name, path) in enumerate(exps, 1):
            for k in kvers:
                say(f"experiment {i}/{len(exps)}: {name} on {k}")
                ts, la0 = time.monotonic(), os.getloadavg()[0]
                err = run_one(name, path, k, args)
                took[(k, name)] = time.monotonic() - ts
                load[(k, name)] = (la0, os.getloadavg()[0])
                if "qemu_rss_mib" in PARTS.get((k, name), {}):
                    rss[(k, name)] = PARTS[(k, name)]["qemu_rss_mib"]
                if err:
                    failures[(k, name)] = err
                    say(f"{name} [{k}]: FAILED: {err}")
                else:
                    say(f"{name} [{k}]: done in {took[(k, name)]:.0f}s")

    meta = os.path.join(RESULTS, "run.json")
    if args.report_only:
        try:
            args.env, (args.count, count_why), took, load, rss, failures = load_run_meta(meta)
        except FileNotFoundError:
            say(f"{meta}: none, so this report has no times and no failures of the runs")
        except (OSError, ValueError) as e:
            sys.exit(f"run: --report-only: {e}")
    else:
        os.makedirs(RESULTS, exist_ok=True)
        with open(meta, "w") as f:
            json.dump({"env": args.env, "count": [args.count, count_why],
                       "took": [[k, n, t] for (k, n), t in took.items()],
                       "load": [[k, n, list(x)] for (k, n), x in load.items()],
                       "qemu_rss_mib": [[k, n, x] for (k, n), x in rss.items()],
                       "failures": [[k, n, e] for (k, n), e in failures.items()]}, f)
    if args.count is None:
        args.count, count_why = "off", "not recorded"
    env_note = " ".join(f"{k}={v}" for k, v in args.env.items())
    accels = recorded_accels(kvers, exps)
    report = ["# memhp-lab results\n",
              f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
              f"- guest kernels: {', '.join(kvers)} under QEMU {accels}; " +
              (f"ratios are {' and '.join(series(k) for k in kvers[1:])} over {series(kvers[0])}, "
               "from runs in this `make run`, kernels alternating per experiment"
               if len(kvers) > 1 else "one kernel, no ratios"),
              f"- host: {platform.node()}, {os.cpu_count()} CPUs, {platform.release()}, "
              f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              f"(shared with other guests: see Documentation/experiments/kernel-versions.rst)",
              f"- repetitions: {env_note or 'the experiments defaults'}",
              "- instruction counts: " + (
                  f"none ({count_why}; make run COUNT=1 counts under TCG)" if args.count == "off"
                  else f"{'every guest' if args.count == 'on' else 'the experiments that mark phases'}"
                  f" ({count_why}), exact, in each one's last table; their times were "
                  "taken under the counting plugin, slower than without it "
                  "(Documentation/admin-guide/counting.rst; make run COUNT=0 times without it)"),
              f"- experiments: {len(exps)} x {len(kvers)} kernels, failed: {len(failures)}"
              + (f" ({', '.join(f'{n} on {series(k)}' for k, n in failures)})" if failures else "")]
    if took:
        report.append("- time per run (host load average, 1 min, at its start and end): " +
                      ", ".join(f"{n} {series(k)} {s:.0f}s" +
                                (" ({:.1f}-{:.1f})".format(*load[(k, n)]) if (k, n) in load else "")
                                for (k, n), s in took.items()))
    if rss:
        report.append(f"- QEMU's peak resident set per run (MiB; the host has {host_mem_mib()} "
                      "MiB): " + ", ".join(f"{n} {series(k)} {x}" for (k, n), x in rss.items()))
    report.append("")
    if len(kvers) > 1:
        report.append(f"## {' vs '.join(series(k) for k in kvers)}: side by side\n")
        report.append(f"Every table of the {series(kvers[0])} summaries beside the same table of "
                      "each newer kernel; rows joined by their label cells; for each "
                      "numeric column that differs, both figures and the ratio. Where a table "
                      "has min and max columns, *ranges overlap* says whether the two kernels' "
                      "min-max ranges overlap (no: the difference exceeds the spread seen in "
                      "this run).\n")
        for name, _ in exps:
            report.append(compare(name, kvers))
    for k in kvers:
        report.append(f"## {k}: details\n")
        for name, _ in exps:
            summary = os.path.join(RESULTS, release_of(k), name, "summary.md")
            if (k, name) in failures:
                report.append(f"### {name}\n\nFAILED: {failures[(k, name)]}\n")
            elif os.path.exists(summary):
                with open(summary) as f:
                    text = f.read()
                # Headings one level down; figures linked relative to the summary.
                levels = [len(m) for m in re.findall(r"^(#+) ", text, flags=re.M)]
                shift = "#" * (3 - min(levels, default=3))
                if shift:
                    text = re.sub(r"^(#+) ", lambda m: m.group(1) + shift + " ", text, flags=re.M)
                text = text.replace("](", f"]({k}/{name}/").replace(f"]({k}/{name}/http", "](http")
                report.append(text)
            else:
                report.append(f"### {name}\n\nno results for {k}\n")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "report.md"), "w") as f:
        f.write("\n".join(report) + "\n")

    print()
    print("\n".join(report))
    if took and not args.report_only:
        report_times(kvers, exps, took, time.monotonic() - t0)
    say(f"report: results/report.md ({time.monotonic() - t0:.0f}s)")
    if failures:
        say("failed: " + ", ".join(f"{n} on {k}" for k, n in failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
