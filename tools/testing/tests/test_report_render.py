# SPDX-License-Identifier: GPL-2.0
"""results/report.md rendered from stored results (make run --report-only):
the kernels side by side with ratios, each kernel's details, failures."""

from memhp_host import report
from memhp_host.report import Runs, render_report

K61, K73 = "6.1.0-1-amd64", "7.3.4+deb13-amd64"
SUMMARY = """## Plug

| op | runs | ms | min ms | max ms |
|---|---|---|---|---|
| plug 1G | 6 | {ms} | {lo} | {hi} |
| unplug 1G | 6 | 20 | 19 | 21 |

![plot](plot.png)
"""


def stored(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", str(tmp_path))
    for k, ms, lo, hi in ((K61, 10, 9, 11), (K73, 15, 14, 16)):
        d = tmp_path / k / "10-plug"
        d.mkdir(parents=True)
        (d / "summary.md").write_text(SUMMARY.format(ms=ms, lo=lo, hi=hi))
        (d / "accel").write_text("tcg\n")
    runs = Runs({"CYCLES": "2"}, ("auto", "the default under TCG"))
    runs.took = {(K61, "10-plug"): 61.0, (K73, "10-plug"): 73.0}
    return runs


def test_the_first_kernel_is_the_base_of_the_ratios(tmp_path, monkeypatch):
    text = render_report([K61, K73], [("10-plug", "/nonexistent")], stored(tmp_path, monkeypatch))
    assert "- guest kernels: 6.1.0-1-amd64, 7.3.4+deb13-amd64 under QEMU TCG; ratios are " \
           "7.3 over 6.1" in text
    assert "- repetitions: CYCLES=2" in text
    assert "| op | ms 6.1 | ms 7.3 | 7.3/6.1 | min ms 6.1 | min ms 7.3 | 7.3/6.1 | max ms 6.1 " \
           "| max ms 7.3 | 7.3/6.1 | ms ranges overlap |" in text
    assert "| plug 1G | 10 | 15 | 1.50 | 9 | 14 | 1.56 | 11 | 16 | 1.45 | **no**: 6.1 lower |" in text
    assert "| unplug 1G | 20 | 20 | 1.00 | 19 | 19 | 1.00 | 21 | 21 | 1.00 | yes |" in text
    # A column equal in every row is named once, without ratios.
    assert "Equal on both kernels: runs." in text and "runs 6.1" not in text
    # The details: headings a level down, links relative to the report.
    assert "### Plug" in text and f"![plot]({K73}/10-plug/plot.png)" in text


def test_the_other_order_puts_the_other_kernel_at_the_base(tmp_path, monkeypatch):
    text = render_report([K73, K61], [("10-plug", "/nonexistent")], stored(tmp_path, monkeypatch))
    assert "| op | ms 7.3 | ms 6.1 | 6.1/7.3 |" in text
    assert "| plug 1G | 15 | 10 | 0.67 | 14 | 9 | 0.64 | 16 | 11 | 0.69 | **no**: 6.1 lower |" in text


def test_a_failed_run_is_reported_not_its_old_summary(tmp_path, monkeypatch):
    runs = stored(tmp_path, monkeypatch)
    runs.failures[(K73, "10-plug")] = "guest part failed (memhp-vm exit 124)"
    text = render_report([K61, K73], [("10-plug", "/nonexistent")], runs)
    assert "failed: 1 (10-plug on 7.3)" in text
    assert "### 10-plug\n\nFAILED: guest part failed (memhp-vm exit 124)" in text


def test_one_kernel_has_no_ratios(tmp_path, monkeypatch):
    text = render_report([K61], [("10-plug", "/nonexistent")], stored(tmp_path, monkeypatch))
    assert "one kernel, no ratios" in text and "side by side" not in text
