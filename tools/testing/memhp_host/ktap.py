# SPDX-License-Identifier: GPL-2.0
"""KTAP: the kselftest runner's output and pytest's JUnit XML as leaf
results, the guest's progress timings, and make check's merged report
(one nested KTAP node per stage, the totals)."""

import re


# KTAP: "ok|not ok N description # directive diagnostic"; a description
# cannot contain "#", and text after it that is not a directive (kselftest's
# runner.sh writes "# exit=1") is a diagnostic.
RESULT_RE = re.compile(r"^(not ok|ok) (\d+)\s*([^#]*?)\s*(?:#\s*(.*))?$")


DIRECTIVE_RE = re.compile(r"(SKIP|TODO|XFAIL|XPASS|TIMEOUT|ERROR)\b\s*(.*)", re.IGNORECASE)
# A leaf's status and the directive that says it, both ways. XPASS
# (kselftest's ksft_test_result_xpass()): passed where a failure was
# expected, counted apart and not as a failure; ERROR
# (ksft_test_result_error()): the test could not decide, a failure;
# TIMEOUT (runner.sh) a failure; TODO leaves the result as it is.
DIRECTIVE_OF = {"skip": "SKIP", "xfail": "XFAIL", "xpass": "XPASS", "error": "ERROR"}
STATUS_OF = {**{d: s for s, d in DIRECTIVE_OF.items()}, "TIMEOUT": "fail"}


class Leaf:
    def __init__(self, name, status, reason=""):
        self.name = name
        self.status = status  # pass | fail | skip | xfail | xpass | error
        self.reason = reason


def strip_diag(line):
    """(depth, text): the "# " prefixes runner.sh nests output in, removed."""
    depth = 0
    while line.startswith("# "):
        line = line[2:]
        depth += 1
    return depth, line


def parse_runner_tap(output):
    """Leaves from kselftest runner.sh output (or one plain KTAP document).

    runner.sh prints "ok N selftests: DIR: prog" per program with the
    program's own KTAP prefixed by "# ". The leaves are each program's own
    results; a program that failed or was skipped as a whole without such
    results (crash, bail out, timeout, missing prerequisite) is a leaf of
    its own, so nothing that went wrong disappears from the totals.
    """
    leaves = []
    current = []
    for raw in output.splitlines():
        depth, line = strip_diag(raw.rstrip())
        m = RESULT_RE.match(line)
        if not m:
            continue
        status = "fail" if m.group(1) == "not ok" else "pass"
        comment = m.group(4) or ""
        d = DIRECTIVE_RE.match(comment)
        directive, why = (d.group(1).upper(), d.group(2)) if d else (None, comment)
        status = STATUS_OF.get(directive, status)
        name = m.group(3).strip() or f"test {m.group(2)}"
        if depth == 1:
            current.append(Leaf(name, status, why))
        elif depth == 0:
            prog = name.split(": ")[-1]
            sub = current
            current = []
            for leaf in sub:
                leaf.name = f"{prog}: {leaf.name}"
            leaves.extend(sub)
            if status == "fail" and not any(x.status in ("fail", "error") for x in sub):
                leaves.append(Leaf(f"{prog}: exits successfully", "fail", why or directive or ""))
            elif status == "skip" and not sub:
                leaves.append(Leaf(prog, "skip", why))
            elif not sub:
                leaves.append(Leaf(prog, status, why))
    # A plain KTAP document (no runner.sh around it): its results are depth 0.
    if current:
        leaves.extend(current)
    return leaves


PROG_RE = re.compile(r"^selftests: [^:]+: (\S+)$")


def collect_figures(output, where):
    """The "figures: ..." diagnostics of a guest run: [(program, text)]
    (where names the lines before the first program's)."""
    figures = []
    prog = where
    for raw in output.splitlines():
        _, line = strip_diag(raw.rstrip())
        m = PROG_RE.match(line)
        if m:
            prog = m.group(1)
        elif line.startswith("figures: "):
            figures.append((prog, line[len("figures: "):]))
    return figures


def parse_junit(path):
    """Leaves from pytest's JUnit XML: one per test, "pytest: FILE::TEST"."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    leaves = []
    for case in root.iter("testcase"):
        mod = case.get("classname", "").split(".")[-1]
        name = f"pytest: {mod}.py::{case.get('name')}"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        skip = case.find("skipped")
        if bad is not None:
            msg = " ".join((bad.get("message") or "").split())
            leaves.append(Leaf(name, "fail", msg[:300]))
        elif skip is not None:
            leaves.append(Leaf(name, "skip", skip.get("message") or ""))
        else:
            leaves.append(Leaf(name, "pass"))
    return leaves


HDR_RE = re.compile(r"^selftests: [^:]+: (\S+)$")


def guest_times(stamps, t0):
    """(boot s, {test: s}, [(test, case, s)]) from a group's stamped output.

    The kselftest runner prints "# selftests: memhp: T" before it starts T
    and "ok N selftests: memhp: T" when T ends; the boot is everything
    before the first test starts (QEMU, the kernel, the guest's make).
    """
    boot = None
    start = {}
    took = {}
    cases = []
    prog = None
    last = None
    for t, raw in stamps:
        depth, line = strip_diag(raw.rstrip())
        m = HDR_RE.match(line)
        if m and depth == 1:
            prog = m.group(1)
            start[prog] = last = t
            if boot is None:
                boot = t - t0
            continue
        m = RESULT_RE.match(line)
        if m and depth == 0:
            name = m.group(3).strip().split(": ")[-1]
            if name in start:
                took[name] = t - start[name]
            prog = None
        elif m and depth == 1 and prog:
            # A case's time: since the previous case of its program ended.
            cases.append((prog, m.group(3).strip(), t - last))
            last = t
    return boot, took, cases


class StageResult:
    """One stage of make check: its name, leaves and wall seconds."""

    def __init__(self, name, leaves, seconds):
        self.name = name
        self.leaves = leaves
        self.seconds = seconds

    def count(self, *statuses):
        return sum(x.status in statuses for x in self.leaves)

    @property
    def ok(self):
        return not self.count("fail", "error")


def leaf_line(j, leaf):
    """A leaf's KTAP result line, at depth 0 ("ok 3 name # SKIP why")."""
    word = "not ok" if leaf.status in ("fail", "error") else "ok"
    desc = leaf.name.replace("#", "")
    if leaf.status in DIRECTIVE_OF:
        extra = f" # {DIRECTIVE_OF[leaf.status]} {leaf.reason}"
    elif leaf.status == "fail" and leaf.reason:
        extra = f" # {leaf.reason}"
    else:
        extra = ""
    return f"{word} {j} {desc}{extra}"


def stage_node(i, stage):
    """A stage as node i of the top document: its leaves as a nested KTAP
    document, then its own result line."""
    lines = ["  KTAP version 1", f"  1..{len(stage.leaves)}"]
    lines += ["  " + leaf_line(j, leaf) for j, leaf in enumerate(stage.leaves, 1)]
    lines.append(f"{'ok' if stage.ok else 'not ok'} {i} {stage.name} # {stage.seconds:.0f}s")
    return lines


def totals(stages):
    """Leaves by status over every stage."""
    out = dict.fromkeys(("pass", "fail", "skip", "xfail", "xpass", "error"), 0)
    for stage in stages:
        for leaf in stage.leaves:
            out[leaf.status] += 1
    return out


def totals_lines(t):
    """kselftest's "# Totals:" line and the plain line, which counts an
    error as a failure: both fail the run."""
    return [f"# Totals: pass:{t['pass']} fail:{t['fail']} xfail:{t['xfail']} "
            f"xpass:{t['xpass']} skip:{t['skip']} error:{t['error']}",
            f"check: {t['pass']} passed, {t['fail'] + t['error']} failed, "
            f"{t['skip']} skipped"]
