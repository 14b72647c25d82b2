# SPDX-License-Identifier: GPL-2.0
"""make run's report: QEMU's peak resident set (memhp-vm measures it) and the
count ratios an experiment asks for."""

import os
import resource
import subprocess
import sys

import pytest

from memhp_host import report, run, vm


def test_peak_rss_is_the_largest_waited_child():
    # A child that touches 64 MiB, waited for: the peak is at least that.
    subprocess.run([sys.executable, "-c", "b = bytearray(64 << 20); b[::4096] = b'x' * (16384)"],
                   check=True)
    assert vm.qemu_peak_rss_mib() >= 64
    assert vm.qemu_peak_rss_mib() == \
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024


def test_run_reads_the_peak_from_memhp_vm():
    seen = {}
    rc, _ = run.stream(["sh", "-c", "echo guest line; "
                        "echo 'memhp-vm: exit 0 after 12s, QEMU peak RSS 1234 MiB'"],
                       dict(os.environ), "t", seen)
    assert rc == 0 and seen == {"qemu_rss_mib": 1234}
    seen = {}
    run.stream(["sh", "-c", "echo 'memhp-vm: exit 0 after 12s'"], dict(os.environ), "t", seen)
    assert seen == {}
    assert report.host_mem_mib() > 0


def test_count_ratios_from_the_experiment_pairs(tmp_path):
    spec = tmp_path / "count-ratios"
    spec.write_text("# comment\nshim-plug upstream-plug\nshim-x upstream-plug\n")
    by_name = {"shim-plug": [{"kernel": k} for k in (90, 100, 110)],
               "upstream-plug": [{"kernel": k} for k in (200, 210, 220)]}
    lines = report.count_ratios(by_name, str(spec))
    assert lines[-1] == "| shim-plug / upstream-plug | 0.476 | 0.450 | no | 0.476 | 0.450 | no |"
    assert len([ln for ln in lines if ln.startswith("| shim")]) == 1
    assert report.count_ratios(by_name, str(tmp_path / "none")) == []


def test_count_ratios_net_of_spin_waits(tmp_path):
    # Upstream spun in its last run: all-vCPU figures say the shim is
    # cheaper in the median, its work says it costs 1 % more.
    spec = tmp_path / "count-ratios"
    spec.write_text("shim-unplug upstream-unplug\n")
    by_name = {"shim-unplug": [{"kernel": k, "spin_waits": 0} for k in (101, 101, 101)],
               "upstream-unplug": [{"kernel": 100, "spin_waits": 0},
                                   {"kernel": 120, "spin_waits": 20},
                                   {"kernel": 130, "spin_waits": 30}]}
    lines = report.count_ratios(by_name, str(spec))
    assert lines[-1] == ("| shim-unplug / upstream-unplug | 0.842 | 1.010 | yes | "
                         "1.010 | 1.010 | no |")


def test_experiments_named_run_in_the_tree_order_and_opt_in_ones_only_when_named(tmp_path):
    exps = []
    for name in ("10-a", "20-b", "80-long"):
        (tmp_path / name).mkdir()
        exps.append((name, str(tmp_path / name)))
    (tmp_path / "80-long" / "opt-in").write_text("an hour\n")
    names = [n for n, _ in run.select_experiments("", False, exps)]
    assert names == ["10-a", "20-b"]
    assert [n for n, _ in run.select_experiments("", True, exps)] == ["10-a", "20-b", "80-long"]
    assert [n for n, _ in run.select_experiments("80,10", False, exps)] == ["10-a", "80-long"]
    with pytest.raises(ValueError, match="no such experiment"):
        run.select_experiments("99", False, exps)
