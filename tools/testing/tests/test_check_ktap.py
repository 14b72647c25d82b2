# SPDX-License-Identifier: GPL-2.0
"""make check's reading of KTAP: every result kind is counted as what it is."""

import json

from memhp_host import check
from memhp_host.ktap import Leaf, StageResult, collect_figures, stage_node, totals, totals_lines

RUNNER = """TAP version 13
1..1
# selftests: memhp: prog
# TAP version 13
# 1..6
# ok 1 passes
# not ok 2 fails
# ok 3 skipped # SKIP no device
# ok 4 expected failure # XFAIL the known defect
# ok 5 unexpected pass # XPASS the known defect is gone
# not ok 6 undecided # ERROR could not tell
not ok 1 selftests: memhp: prog # exit=1
"""


def test_every_directive_counted():
    leaves = check.parse_runner_tap(RUNNER)
    assert [(x.name, x.status) for x in leaves] == [
        ("prog: passes", "pass"), ("prog: fails", "fail"), ("prog: skipped", "skip"),
        ("prog: expected failure", "xfail"), ("prog: unexpected pass", "xpass"),
        ("prog: undecided", "error")]


def test_a_program_that_fails_without_a_failed_case_is_a_failure():
    out = "# selftests: memhp: crash\n# TAP version 13\n# 1..1\n# ok 1 first\n" \
          "not ok 1 selftests: memhp: crash # exit=139\n"
    leaves = check.parse_runner_tap(out)
    assert [(x.name, x.status) for x in leaves] == [("crash: first", "pass"),
                                                    ("crash: exits successfully", "fail")]


def test_junit_leaves(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text('<testsuites><testsuite>'
                   '<testcase classname="tests.test_a" name="t_ok"/>'
                   '<testcase classname="tests.test_a" name="t_bad">'
                   '<failure message="assert 1 == 2&#10;more">x</failure></testcase>'
                   '<testcase classname="tests.test_a" name="t_skip">'
                   '<skipped message="no qemu"/></testcase>'
                   '</testsuite></testsuites>')
    leaves = check.parse_junit(str(xml))
    assert [(x.name, x.status, x.reason) for x in leaves] == [
        ("pytest: test_a.py::t_ok", "pass", ""),
        ("pytest: test_a.py::t_bad", "fail", "assert 1 == 2 more"),
        ("pytest: test_a.py::t_skip", "skip", "no qemu")]


def test_group_timeout_follows_the_budgets():
    import argparse
    args = argparse.Namespace(guest_timeout=0)
    probe = check.budget_of("sparse_hotplug_probe.sh")
    assert check.group_timeout(args, ["sparse_hotplug_probe.sh"]) == \
        check.BOOT_ALLOWANCE + check.GROUP_SLACK * probe
    assert check.group_timeout(args, check.guest_groups(None)[""]) == check.GROUP_TIMEOUT_MAX
    args.guest_timeout = 77
    assert check.group_timeout(args, ["sparse_hotplug_probe.sh"]) == 77


def test_group_cmd_passes_qemu_and_hold_choice():
    """check.py --qemu PATH --reuse-freed-ram reaches every guest's memhp-vm;
    without them memhp-vm's defaults stand (the QEMU on PATH, the hold)."""
    import argparse
    base = dict(guest_timeout=0, cpu_features="", env={})
    cmd = check.group_cmd(argparse.Namespace(**base), "6.1", "", ["acpi_dimm.sh"])
    assert "--qemu" not in cmd and "--reuse-freed-ram" not in cmd
    args = argparse.Namespace(qemu="/opt/q/qemu-system-x86_64", reuse_freed_ram=True, **base)
    cmd = check.group_cmd(args, "6.1", "--cxl 512M", ["cxl_memory.sh"])
    dash = cmd.index("--")
    assert cmd[cmd.index("--qemu") + 1] == "/opt/q/qemu-system-x86_64"
    assert cmd.index("--qemu") < dash and cmd.index("--reuse-freed-ram") < dash


def test_guest_kernels_are_some_of_the_kernels(tmp_path):
    """--guest-kernels picks among --kernels; a kernel tree not among them
    is refused like a release that matches none."""
    import pytest
    ks = ["6.1.0-56-amd64", "6.12.117+deb12-amd64"]
    assert check.guest_kernels("", ks) == ks
    assert check.guest_kernels("6.12", ks) == ["6.12.117+deb12-amd64"]
    with pytest.raises(ValueError):
        check.guest_kernels("7.3", ks)
    tree = tmp_path / "linux"
    (tree / "include" / "config").mkdir(parents=True)
    (tree / "include" / "config" / "kernel.release").write_text("7.3.4-memhp-user\n")
    (tree / "arch" / "x86" / "boot").mkdir(parents=True)
    (tree / "arch" / "x86" / "boot" / "bzImage").write_text("")
    with pytest.raises(ValueError, match="not in --kernels"):
        check.guest_kernels(str(tree), ks)
    assert check.guest_kernels(str(tree), ks + [str(tree)]) == [str(tree)]


def test_runner_stage_takes_the_guest_qemu_not_the_hold_switch(monkeypatch):
    import argparse
    seen = []
    monkeypatch.setattr(check, "run_streamed",
                        lambda cmd, prefix: seen.append(cmd) or (0, "ok 1 x\n"))
    check.stage_runner(argparse.Namespace(qemu="/q/qemu", reuse_freed_ram=True))
    assert seen[-1][1:] == ["--qemu", "/q/qemu"]
    check.stage_runner(argparse.Namespace(qemu="", reuse_freed_ram=False))
    assert seen[-1][1:] == []


def test_times_come_from_the_record_not_from_a_previous_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(check, "BUILD", str(tmp_path / "build"))
    rec = check.Record()
    rec.times.append(("7.3.4+deb13-amd64", "acpi_dimm.sh", 95.0, 90))
    rec.boots.append(("7.3.4+deb13-amd64", "default guest", 31.0, 1300.0))
    stage = StageResult("guest 7.3.4+deb13-amd64", [Leaf("a", "pass")], 1300.0)
    check.report_times([stage], 1300.0, rec)
    err = capsys.readouterr().out + capsys.readouterr().err
    assert "acpi_dimm.sh took 95s, over its budget of 90s" in err
    with open(tmp_path / "build" / "check-times.json") as f:
        times = json.load(f)
    assert times["tests"] == [{"kernel": "7.3.4+deb13-amd64", "test": "acpi_dimm.sh",
                               "seconds": 95.0, "budget_s": 90}]
    assert times["stages"] == [{"stage": "guest 7.3.4+deb13-amd64", "pass": 1, "fail": 0,
                                "skip": 0, "seconds": 1300.0}]
    # A second record starts empty: nothing is kept between runs.
    assert check.Record().times == []


def test_figures_are_returned_by_program():
    out = ("# figures: before any program\n# selftests: memhp: soak.sh\n"
           "# # figures: 1000 operations\n# selftests: memhp: fuzz_inputs.sh\n"
           "# figures: 421 inputs\n")
    assert collect_figures(out, "default guest") == [
        ("default guest", "before any program"), ("soak.sh", "1000 operations"),
        ("fuzz_inputs.sh", "421 inputs")]


def test_a_test_over_its_budget_is_warned_at_and_one_under_it_is_not():
    times = [("6.1", "a.sh", 91.0, 90), ("6.1", "b.sh", 90.0, 90), ("6.1", "c.sh", 500.0, None)]
    warnings = check.budget_warnings(times)
    assert len(warnings) == 1 and "6.1 a.sh took 91s, over its budget of 90s" in warnings[0]


def test_the_slowest_tests_come_first_with_their_budgets():
    rec = check.Record()
    rec.times += [("6.1", "fast.sh", 5.0, 10), ("6.1", "slow.sh", 50.0, None)]
    lines = check.time_lines(rec)
    i = lines.index("slowest tests (wall seconds in the guest; budget):")
    assert lines[i + 1].endswith("6.1 slow.sh") and lines[i + 2].endswith("6.1 fast.sh (10s)")


def test_stages_merge_into_one_ktap_document_with_totals():
    stages = [StageResult("unit", [Leaf("a", "pass"), Leaf("b", "skip", "no x")], 3.2),
              StageResult("guest 6.1", [Leaf("c # d", "fail", "exit 1"),
                                        Leaf("e", "xfail", "known"), Leaf("f", "error", "?")],
                          40.0)]
    assert stage_node(1, stages[0]) == ["  KTAP version 1", "  1..2", "  ok 1 a",
                                        "  ok 2 b # SKIP no x", "ok 1 unit # 3s"]
    assert stage_node(2, stages[1]) == ["  KTAP version 1", "  1..3", "  not ok 1 c  d # exit 1",
                                        "  ok 2 e # XFAIL known", "  not ok 3 f # ERROR ?",
                                        "not ok 2 guest 6.1 # 40s"]
    t = totals(stages)
    assert t == {"pass": 1, "fail": 1, "skip": 1, "xfail": 1, "xpass": 0, "error": 1}
    assert totals_lines(t) == ["# Totals: pass:1 fail:1 xfail:1 xpass:0 skip:1 error:1",
                               "check: 1 passed, 2 failed, 1 skipped"]



def test_a_longer_boot_allowance_reaches_memhp_vm_and_the_group_limit():
    import argparse
    args = argparse.Namespace(guest_timeout=0, boot_timeout=1200, cpu_features="", env={})
    cmd = check.group_cmd(args, "7.3", "", ["acpi_dimm.sh"])
    assert cmd[cmd.index("--boot-timeout") + 1] == "1200"
    short = check.group_timeout(argparse.Namespace(guest_timeout=0), ["acpi_dimm.sh"])
    assert check.group_timeout(args, ["acpi_dimm.sh"]) in (short + 900, check.GROUP_TIMEOUT_MAX)
