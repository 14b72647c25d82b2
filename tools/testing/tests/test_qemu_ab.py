# SPDX-License-Identifier: GPL-2.0
"""make qemu-ab's table, rendered from logs (REPORT_ONLY=1)."""

import os
import subprocess

from conftest import TOP

AB = os.path.join(TOP, "tools", "qemu", "ab.sh")
TB_STALE = """step 3 (new DIMM, same range): pages in range 100, returned 2: 90, returned another value: 10 (first 1)
step 4 (new DIMM, another offset): pages in range 100, returned 4: 100, returned another value: 0; rewritten: returned 5: 1, returned another value: 99 (first 4)
memhp-vm: exit 1 after 110s
"""
TB_CLEAN = """step 3 (new DIMM, same range): pages in range 100, returned 2: 100, returned another value: 0
step 4 (new DIMM, another offset): pages in range 100, returned 4: 100, returned another value: 0; rewritten: returned 5: 100, returned another value: 0
memhp-vm: exit 0 after 184s
"""
# memhp-vm's excerpt of a general protection fault: no "Oops" in it.
MR_GPF = """module-replug: 8 of 100 cycles ran
memhp-vm:   general protection fault, probably for non-canonical address 0x2e61: 0000 [#1] PREEMPT SMP NOPTI
memhp-vm: exit 125 after 173s
"""
MR_CLEAN = "module-replug: 100 of 100 cycles ran\nmemhp-vm: exit 0 after 723s\n"


def render(tmp_path, logs):
    out = tmp_path / "ab"
    out.mkdir()
    for name, text in logs.items():
        (out / name).write_text(text)
    qemu = tmp_path / "qemu"
    qemu.write_text("#!/bin/sh\necho QEMU emulator version 10.0.2\n")
    qemu.chmod(0o755)
    env = dict(os.environ, REPORT_ONLY="1", AB_OUT=str(out), STOCK_QEMU=str(qemu),
               FIXED_QEMU=str(qemu))
    return subprocess.run(["bash", AB, "6.1"], env=env, capture_output=True, text=True,
                          timeout=30, check=False)


def rows(r):
    return [l for l in r.stdout.splitlines() if l.startswith("| 6.1 |")]


def test_a_general_protection_fault_is_an_oops(tmp_path):
    r = render(tmp_path, {"6.1-stock-tb-replug.log": TB_STALE,
                          "6.1-stock-module-replug.log": MR_GPF,
                          "6.1-fixed-tb-replug.log": TB_CLEAN,
                          "6.1-fixed-module-replug.log": MR_CLEAN})
    stock, fixed = rows(r)
    assert stock == "| 6.1 | stock | 10 of 100 | 99 of 100 | 8 of 100 | yes | 1/125 |"
    assert fixed == "| 6.1 | fixed | 0 of 100 | 0 of 100 | 100 of 100 | no | 0/0 |"
    assert r.returncode == 0


def test_a_fixed_qemu_with_an_oops_fails_the_comparison(tmp_path):
    r = render(tmp_path, {"6.1-stock-tb-replug.log": TB_STALE,
                          "6.1-stock-module-replug.log": MR_GPF,
                          "6.1-fixed-tb-replug.log": TB_CLEAN,
                          "6.1-fixed-module-replug.log": MR_GPF})
    assert rows(r)[1].split("|")[6].strip() == "yes"
    assert r.returncode == 1
