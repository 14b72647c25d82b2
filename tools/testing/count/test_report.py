# SPDX-License-Identifier: GPL-2.0
"""memhp-count-report's attribution of blocks to functions, without a guest.

Each test writes a tiny count.json, count.json.kallsyms and count.json.syms
into a temporary directory, runs the report with --json and checks the
phase's function table.

  python3 -m pytest tools/testing/count/test_report.py
  python3 -m unittest discover -s tools/testing/count -p 'test_*.py'

MEMHP_COUNT_REPORT=PATH runs another copy of the report.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.environ.get("MEMHP_COUNT_REPORT", os.path.join(HERE, "memhp-count-report"))

KSTART = 0xffff800000000000
CORE = 0xffffffff81000000
# Module a: text from MOD_A, 0x3000 bytes in /proc/modules; an unloaded
# module's code right after it, within 64 KiB of a's last symbol.
MOD_A = 0xffffffffc0000000
MOD_A_SIZE = 0x3000
A_LAST = MOD_A + 0x1000
UNLOADED = MOD_A + MOD_A_SIZE + 0x100


def kallsyms_line(addr, typ, name, module=None):
    return f"{addr:016x} {typ} {name}" + (f"\t[{module}]" if module else "") + "\n"


def modules_line(name, size, addr, taints=""):
    return f"{name} {size} 0 - Live 0x{addr:016x}{taints}\n"


A_SYMS = kallsyms_line(MOD_A, "t", "a_first", "a") + kallsyms_line(A_LAST, "T", "a_last", "a")
A_MODULES = "@module " + modules_line("a", MOD_A_SIZE, MOD_A)


class Report(unittest.TestCase):
    def run_report(self, blocks, syms, kallsyms_mods="", name="p"):
        """The function table {name: insns} of one phase whose blocks are
        [pc, insns] pairs, with FILE.syms syms and FILE.kallsyms the core
        symbols and kallsyms_mods."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "count.json")
            insns = sum(n for _, n in blocks)
            with open(path, "w") as f:
                json.dump({"format": "memhp-count 2", "kernel_start": KSTART,
                           "vcpus": [{"kernel": insns, "user": 0}], "slots": 2 + len(blocks),
                           "max_slots": 262144, "overflow_insns": {"kernel": 0},
                           "open_phase": None, "unbalanced_marks": 0, "bad_marks": 0,
                           "phases": [{"name": name, "complete": True, "begin_vcpu": 0,
                                       "end_vcpu": 0, "wall_ns": 1000, "blocks": blocks,
                                       "vcpus": [{"kernel": insns, "user": 0,
                                                  "idle_ns": 0}]}]}, f)
            with open(path + ".kallsyms", "w") as f:
                f.write(kallsyms_line(CORE, "T", "_stext"))
                f.write(kallsyms_line(CORE + 0x100, "T", "core_func"))
                f.write(kallsyms_line(CORE + 0x100000, "T", "native_queued_spin_lock_slowpath"))
                f.write(kallsyms_line(CORE + 0x101000, "t", "read_hpet.part.0"))
                f.write(kallsyms_line(CORE + 0x102000, "T", "queued_spin_lock_not_a_wait"))
                f.write(kallsyms_mods)
            with open(path + ".syms", "w") as f:
                f.write(syms)
            out = subprocess.run([sys.executable, REPORT, "--json", "--top", "0", path],
                                 capture_output=True, text=True, check=True).stdout
        (phase,) = json.loads(out)["phases"]
        self.phase = phase
        return dict(phase["functions"])

    def test_in_module_text(self):
        """A block inside a module's extent is its symbol's."""
        funcs = self.run_report([[A_LAST + 0x10, 5]], "@phase p\n" + A_SYMS + A_MODULES)
        self.assertEqual(funcs, {"a_last [a]": 5})

    def test_past_module_end_is_unknown(self):
        """An unloaded module's code past a's end, 64 KiB or less above
        a's last symbol, is [unknown], not a's."""
        funcs = self.run_report([[A_LAST + 0x10, 5], [UNLOADED, 7]],
                                "@phase p\n" + A_SYMS + A_MODULES)
        self.assertEqual(funcs, {"a_last [a]": 5, "[unknown]": 7})

    def test_tainted_module(self):
        """A tainted module's line ends in its taints, after the address."""
        mods = "@module " + modules_line("a", MOD_A_SIZE, MOD_A, " (OE)")
        funcs = self.run_report([[A_LAST + 0x10, 5], [UNLOADED, 7]], "@phase p\n" + A_SYMS + mods)
        self.assertEqual(funcs, {"a_last [a]": 5, "[unknown]": 7})

    def test_unchanged_modules_keep_extents(self):
        """"@phase NAME =": the previous dump's symbols and extents."""
        syms = "@phase q\n" + A_SYMS + A_MODULES + "@phase p =\n"
        funcs = self.run_report([[A_LAST + 0x10, 5], [UNLOADED, 7]], syms)
        self.assertEqual(funcs, {"a_last [a]": 5, "[unknown]": 7})

    def test_snapshot_extents(self):
        """A phase a program marked: the snapshot's symbols and extents."""
        syms = "@snapshot\n" + A_SYMS + A_MODULES
        funcs = self.run_report([[A_LAST + 0x10, 5], [UNLOADED, 7]], syms)
        self.assertEqual(funcs, {"a_last [a]": 5, "[unknown]": 7})

    def test_end_modules_with_last_snapshot_extents(self):
        """A phase a program marked, a module loaded at the end (FILE.kallsyms):
        bounded by the extent in the last snapshot (guest-run's at the end)."""
        funcs = self.run_report([[A_LAST + 0x10, 5], [UNLOADED, 7]],
                                "@snapshot\n" + A_MODULES, kallsyms_mods=A_SYMS)
        self.assertEqual(funcs, {"a_last [a]": 5, "[unknown]": 7})

    def test_no_extent_64k(self):
        """Without the module's extent (symbols saved by an older memhp-mark),
        64 KiB past the nearest symbol below is the limit."""
        funcs = self.run_report([[UNLOADED, 7], [A_LAST + (1 << 16), 3]], "@phase p\n" + A_SYMS)
        self.assertEqual(funcs, {"a_last [a]": 7, "[unknown]": 3})

    def test_core_and_user(self):
        """Core symbols keep the 64 KiB limit; user blocks are [user]."""
        funcs = self.run_report([[CORE + 0x200, 2], [CORE + 0x100 + (1 << 16), 3], [0, 4]],
                                "@phase p\n" + A_SYMS + A_MODULES)
        self.assertEqual(funcs, {"core_func": 2, "[unknown]": 3, "[user]": 4})

    def test_spin_waits(self):
        """A phase's spin-waits are its instructions in SPIN_WAITS functions,
        clone suffixes included, and in no other function."""
        funcs = self.run_report([[CORE + 0x100010, 5], [CORE + 0x101010, 7], [CORE + 0x102010, 11],
                                 [CORE + 0x200, 2], [0, 4]], "@phase p\n" + A_SYMS + A_MODULES)
        self.assertEqual(funcs["read_hpet.part.0"], 7)
        self.assertEqual(self.phase["spin_waits"], 12)
        self.assertEqual(self.phase["kernel"], 29)


if __name__ == "__main__":
    unittest.main()
