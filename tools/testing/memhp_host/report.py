# SPDX-License-Identifier: GPL-2.0
"""make run's report: each experiment's marked phases as an instruction
table, and every table of one kernel's summaries beside the same table
of each other kernel, with the ratios."""

import datetime
import fnmatch
import json
import os
import platform
import re
import subprocess
from collections import Counter
from statistics import median

from . import RESULTS, TESTING
from .kernels import release_of, series


COUNT_REPORT = os.path.join(TESTING, "count", "memhp-count-report")


def net(ph):
    """A phase's all-vCPU kernel instructions without its spin-waits
    (memhp-count-report's SPIN_WAITS)."""
    return ph["kernel"] - ph.get("spin_waits", 0)


def count_ratios(by_name, spec):
    """Markdown lines of PHASE / BASE for each "PHASE BASE" line of the file
    spec (all-vCPU kernel instructions: the medians' ratio, the minimums'
    ratio, and whether the two min-max ranges overlap; the same without
    spin-waits), [] without it."""
    try:
        with open(spec) as f:
            pairs = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
    except OSError:
        return []
    rows = []

    def cells(key, pair):
        a, b = (sorted(key(ph) for ph in by_name[p]) for p in pair)
        return (f"{median(a) / median(b):.3f} | {a[0] / b[0]:.3f} | "
                f"{'yes' if a[0] <= b[-1] and b[0] <= a[-1] else 'no'}")
    for pair in pairs:
        if len(pair) != 2 or not all(p in by_name for p in pair):
            continue
        rows.append(f"| {pair[0]} / {pair[1]} | {cells(lambda ph: ph['kernel'], pair)} | "
                    f"{cells(net, pair)} |")
    if not rows:
        return []
    return ["", "All vCPUs' kernel instructions, phase against phase (ranges overlap: no "
            "means the difference exceeds the spread of both); then the same net of "
            "spin-waits:", "",
            "| phases | median / median | min / min | ranges overlap | "
            "net median / median | net min / min | net ranges overlap |",
            "|---|---|---|---|---|---|---|"] + rows


def append_counts(out, ratios=""):
    """The marked phases' instruction counts, as a table at the end of summary.md.

    One row per phase name: how often it ran; the guest kernel's
    instructions per run on the vCPU that marked it (runs that began and
    ended on one vCPU: the operation itself and the interrupts that vCPU
    took), median; on all vCPUs (background work included), median, min
    and max, and their spread (max - min) / median; the host wall time
    per run, median; the spin-wait instructions among them (a vCPU polling
    for another: host scheduling under TCG, not work), median, and the
    all-vCPU figure net of them, median and spread; and the function with
    most instructions. Where the
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
             "spread % | spin-waits | net of spin-waits | net spread % | all vCPUs per unit | "
             "unit | wall ms | top function |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, phs in by_name.items():
        k = sorted(ph["kernel"] for ph in phs)
        own = [ph["marking_vcpu_counts"]["kernel"] for ph in phs if ph["marking_vcpu_counts"]]
        med = median(k)
        spread = 100 * (k[-1] - k[0]) / med if med else 0
        nk = sorted(net(ph) for ph in phs)
        spin = median(ph.get("spin_waits", 0) for ph in phs)
        nmed = median(nk)
        nspread = 100 * (nk[-1] - nk[0]) / nmed if nmed else 0
        top = Counter()
        for ph in phs:
            for fn, n in ph["functions"][:1]:
                top[fn] += n
        unit = next(((n, u) for pat, n, u in units if fnmatch.fnmatchcase(name, pat)), None)
        per = "-" if not unit else f"{med / unit[0]:.1f}" if med / unit[0] < 100 else \
            f"{med / unit[0]:.0f}"
        lines.append(f"| {name} | {len(k)} | {f'{median(own):.0f}' if own else '-'} | {med:.0f} | {k[0]} | "
                     f"{k[-1]} | {spread:.1f} | {spin:.0f} | "
                     f"{nmed:.0f} | {nspread:.1f} | {per} | {unit[1] if unit else '-'} | "
                     f"{median([ph['wall_ms'] for ph in phs]):.1f} | "
                     f"{top.most_common(1)[0][0] if top else '-'} |")
    lines += count_ratios(by_name, ratios)
    if rep["unbalanced_marks"] or rep["bad_marks"] or rep["open_phase"]:
        lines.append(f"\nMarker problems: {rep['unbalanced_marks']} unbalanced, "
                     f"{rep['bad_marks']} bad, open phase {rep['open_phase']}.")
    with open(os.path.join(out, "summary.md"), "a") as f:
        f.write("\n".join(lines) + "\n")
    return None


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


def ratio(base, value, style="cell"):
    """value / base, in one of the forms the reports print:

    "cell"  (run.py's side-by-side tables, base = the oldest kernel's figure)
            "1.23"; "-" if either is None; base 0: "=" if value is 0 too,
            else "-"
    "x"     "1.23x"; "-" if base is 0 or None
    "float" the number; nan if base is 0 or None
    """
    if style == "cell":
        if base is None or value is None:
            return "-"
        if base == 0:
            return "=" if value == 0 else "-"
        return f"{value / base:.2f}"
    if style == "x":
        return f"{value / base:.2f}x" if base else "-"
    if style == "float":
        return value / base if base else float("nan")
    raise ValueError(f"ratio: unknown style {style!r}")


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


class Runs:
    """What the runs of one make run did, each keyed by (kernel,
    experiment): took (wall seconds), load (1-minute load average at its
    start and end), rss (QEMU's peak resident set, MiB), failures (why),
    parts (seconds of its boot, guest and host parts); and the make run's
    env and count ((--count, why)). Kept in results/run.json, from which
    --report-only renders the report again."""

    def __init__(self, env, count):
        self.env = dict(env)
        self.count = tuple(count)
        self.took, self.load, self.rss, self.failures, self.parts = {}, {}, {}, {}, {}

    def save(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"env": self.env, "count": list(self.count),
                       "took": [[k, n, t] for (k, n), t in self.took.items()],
                       "load": [[k, n, list(x)] for (k, n), x in self.load.items()],
                       "qemu_rss_mib": [[k, n, x] for (k, n), x in self.rss.items()],
                       "failures": [[k, n, e] for (k, n), e in self.failures.items()]}, f)

    @classmethod
    def load(cls, path):
        """The Runs a run.json holds. OSError when it cannot be read;
        ValueError, naming the file, when it does not parse or lacks what
        a run writes."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            m = json.loads(text)
            count = m.get("count", ["off", "not recorded in its run.json"])
            if not isinstance(count, list) or len(count) != 2:
                raise ValueError(f"count {count!r} is not [mode, why]")
            runs = cls(m["env"], count)
            runs.took = {(k, n): float(t) for k, n, t in m["took"]}
            runs.load = {(k, n): tuple(x) for k, n, x in m.get("load", [])}
            runs.rss = {(k, n): x for k, n, x in m.get("qemu_rss_mib", [])}
            runs.failures = {(k, n): e for k, n, e in m["failures"]}
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: not a run.json of make run ({type(e).__name__}: {e})") from e
        return runs


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


def report_header(kvers, exps, runs):
    """results/report.md's header: date, kernels, host, repetitions,
    counting, failures, times and QEMU's memory."""
    count, count_why = runs.count
    env_note = " ".join(f"{k}={v}" for k, v in runs.env.items())
    fails = runs.failures
    head = ["# memhp-lab results\n",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
            f"- guest kernels: {', '.join(kvers)} under QEMU {recorded_accels(kvers, exps)}; " +
            (f"ratios are {' and '.join(series(k) for k in kvers[1:])} over {series(kvers[0])}, "
             "from runs in this `make run`, kernels alternating per experiment"
             if len(kvers) > 1 else "one kernel, no ratios"),
            f"- host: {platform.node()}, {os.cpu_count()} CPUs, {platform.release()}, "
            f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
            f"(shared with other guests: see Documentation/experiments/kernel-versions.rst)",
            f"- repetitions: {env_note or 'the experiments defaults'}",
            "- instruction counts: " + (
                f"none ({count_why}; make run COUNT=1 counts under TCG)" if count == "off"
                else f"{'every guest' if count == 'on' else 'the experiments that mark phases'}"
                f" ({count_why}), exact, in each one's last table; their times were "
                "taken under the counting plugin, slower than without it "
                "(Documentation/admin-guide/counting.rst; make run COUNT=0 times without it)"),
            f"- experiments: {len(exps)} x {len(kvers)} kernels, failed: {len(fails)}"
            + (f" ({', '.join(f'{n} on {series(k)}' for k, n in fails)})" if fails else "")]
    if runs.took:
        head.append("- time per run (host load average, 1 min, at its start and end): " +
                    ", ".join(f"{n} {series(k)} {s:.0f}s" +
                              (" ({:.1f}-{:.1f})".format(*runs.load[(k, n)])
                               if (k, n) in runs.load else "")
                              for (k, n), s in runs.took.items()))
    if runs.rss:
        head.append(f"- QEMU's peak resident set per run (MiB; the host has {host_mem_mib()} "
                    "MiB): " + ", ".join(f"{n} {series(k)} {x}" for (k, n), x in runs.rss.items()))
    return head + [""]


def details(kernel, name, failures):
    """One experiment's own summary on one kernel, its headings a level
    down and its figures linked relative to the report."""
    summary = os.path.join(RESULTS, release_of(kernel), name, "summary.md")
    if (kernel, name) in failures:
        return f"### {name}\n\nFAILED: {failures[(kernel, name)]}\n"
    if not os.path.exists(summary):
        return f"### {name}\n\nno results for {kernel}\n"
    with open(summary) as f:
        text = f.read()
    levels = [len(m) for m in re.findall(r"^(#+) ", text, flags=re.M)]
    shift = "#" * (3 - min(levels, default=3))
    if shift:
        text = re.sub(r"^(#+) ", lambda m: m.group(1) + shift + " ", text, flags=re.M)
    return text.replace("](", f"]({kernel}/{name}/").replace(f"]({kernel}/{name}/http", "](http")


def render_report(kvers, exps, runs):
    """results/report.md from the stored summaries and runs."""
    report = report_header(kvers, exps, runs)
    if len(kvers) > 1:
        report.append(f"## {' vs '.join(series(k) for k in kvers)}: side by side\n")
        report.append(f"Every table of the {series(kvers[0])} summaries beside the same table of "
                      "each newer kernel; rows joined by their label cells; for each "
                      "numeric column that differs, both figures and the ratio. Where a table "
                      "has min and max columns, *ranges overlap* says whether the two kernels' "
                      "min-max ranges overlap (no: the difference exceeds the spread seen in "
                      "this run).\n")
        report += [compare(name, kvers) for name, _ in exps]
    for k in kvers:
        report.append(f"## {k}: details\n")
        report += [details(k, name, runs.failures) for name, _ in exps]
    return "\n".join(report) + "\n"
