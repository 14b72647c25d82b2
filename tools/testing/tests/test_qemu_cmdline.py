# SPDX-License-Identifier: GPL-2.0
"""The QEMU command line of every make check guest group and every make
run experiment, as a host where KVM works and one where it does not would
run it (memhp-vm --print-cmd kvm|tcg), without booting a guest.

Checked: the machine is q35 and the accelerator and CPU model are the ones
memhp-vm names (CXL guests: TCG even where KVM works); the TCG-only
settings (CPU feature cuts, stall detectors) stay off KVM; and each
command line starts in QEMU, paused (-S, under TCG, since KVM guests do
not start on the hosts this suite is developed on), with a pc-dimm
hot-added over QMP, and the memory layout the tests assume: `mem=2G` of
`--mem 3G` hides the GiB at [4G, 5G).
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import TESTING
from memhp_host import check, run

pytestmark = pytest.mark.qemu
GiB = 1 << 30


def machine_of(argv):
    """(machine type, every -machine/-M value) of a QEMU argv."""
    mtype, values = None, []
    for opt, val in zip(argv, argv[1:]):
        if opt in ("-machine", "-M"):
            values.append(val)
            for part in val.split(","):
                if "=" not in part:
                    mtype = part
                elif part.startswith("type="):
                    mtype = part[len("type="):]
    return mtype, values


def values_of(argv, opt):
    return [v for o, v in zip(argv, argv[1:]) if o == opt]


def guest_cmds():
    """{label: memhp-vm command without --print-cmd}: check's groups and
    run's experiments, as check.py and run.py build them."""
    kernel = check.kernels()[0] if check.kernels() else "6.1"
    cargs = argparse.Namespace(guest_timeout=1800, cpu_features=check.CHECK_CPU_FEATURES,
                               env={})
    cmds = {}
    for opts, tests in check.guest_groups([]).items():
        cmds[f"check [{opts or 'default guest'}]"] = (
            lambda extra, o=opts, t=tests: check.group_cmd(cargs, kernel, o, t, extra), opts)
    rargs = argparse.Namespace(env={}, count="off", guest_timeout=3600)
    for name, path in run.experiments():
        if os.path.exists(os.path.join(path, "guest")):
            cmds[f"run {name}"] = (
                lambda extra, p=path: run.guest_cmd(p, kernel, "/nonexistent", rargs, extra),
                " ".join(run.vm_args_of(path)))
    return cmds


def print_cmd(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return shlex.split(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cmdlines():
    """{(label, accel): (memhp-vm options, QEMU argv)}."""
    todo = {}
    for label, (build, opts) in guest_cmds().items():
        for accel in ("kvm", "tcg"):
            todo[(label, accel)] = (opts, build(["--print-cmd", accel]))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futs = {k: pool.submit(print_cmd, c) for k, (_, c) in todo.items()}
        return {k: (todo[k][0], f.result()) for k, f in futs.items()}


def test_every_group_and_experiment_is_covered(cmdlines):
    labels = {k[0] for k in cmdlines}
    assert any(x.startswith("check [") for x in labels)
    assert any(x.startswith("run ") for x in labels)
    assert any("--cxl" in opts for opts, _ in cmdlines.values())


def test_machine_accel_cpu(cmdlines):
    for (label, accel), (opts, argv) in cmdlines.items():
        mtype, machines = machine_of(argv)
        assert mtype == "q35", (label, accel, machines)
        assert not any("accel=" in m for m in machines), (label, machines)
        cxl = "--cxl" in opts
        want = "tcg" if cxl or accel == "tcg" else "kvm"
        accels = values_of(argv, "-accel")
        assert [a.split(",")[0] for a in accels] == [want], (label, accel, accels)
        cpu = values_of(argv, "-cpu")[-1].split(",")
        append = " ".join(values_of(argv, "-append"))
        if want == "kvm":
            assert cpu[:2] == ["host", "topoext=on"], (label, cpu)
            assert "erms=off" not in cpu, (label, "TCG-only CPU cuts under KVM", cpu)
            assert "watchdog_thresh=50" not in append, label
        else:
            assert cpu[:3] == ["max", "svm=off", "vmx=off"], (label, cpu)
            assert "watchdog_thresh=50" in append, label
            if label.startswith("check"):
                assert {"erms=off", "fsrm=off", "la57=off"} <= set(cpu), (label, cpu)
        if cxl:
            assert "hypervisor=off" in cpu, (label, cpu)
        assert "sysctl.kernel.hung_task_timeout_secs=600" in append, label


def qmp(path, *cmds):
    deadline = time.monotonic() + 60
    while True:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(60)
        try:
            s.connect(path)
            break
        except (ConnectionRefusedError, FileNotFoundError):
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    f = s.makefile("rw")
    json.loads(f.readline())
    out = []
    for c in ({"execute": "qmp_capabilities"},) + cmds:
        f.write(json.dumps(c) + "\n")
        f.flush()
        while True:
            reply = json.loads(f.readline())
            if "event" not in reply:
                break
        out.append(reply)
    s.close()
    return out[1:]


def start_paused(argv):
    """Starts argv paused under TCG (-accel kvm and -cpu host replaced),
    hot-adds a DIMM, reads the RAM layout; {"below", "above", "dimm"}."""
    d = tempfile.mkdtemp(prefix="memhp-cmdline-")
    sockdirs = set(re.findall(r"/tmp/memhp-vm-[A-Za-z0-9_]+", " ".join(argv)))
    shms = set(re.findall(r"/dev/shm/[^,\s]+", " ".join(argv)))
    a = []
    for x in argv:
        for sd in sockdirs:
            x = x.replace(sd, d)
        a.append(x)
    for i, x in enumerate(a[:-1]):
        if x == "-accel":
            a[i + 1] = "tcg"
        elif x == "-cpu" and a[i + 1].startswith("host"):
            a[i + 1] = "max"
        elif x == "-initrd":
            open(os.path.join(d, "initrd"), "w").close()
            a[i + 1] = os.path.join(d, "initrd")
    proc = subprocess.Popen(a + ["-S"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        sock = os.path.join(d, "qmp.sock")
        deadline = time.monotonic() + 60
        while not os.path.exists(sock) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is not None:
            return {"error": proc.stderr.read()}
        mtree, dimm_obj, dimm = qmp(
            sock,
            {"execute": "human-monitor-command", "arguments": {"command-line": "info mtree"}},
            {"execute": "object-add", "arguments": {"qom-type": "memory-backend-ram",
                                                    "id": "tdimm", "size": 128 << 20}},
            {"execute": "device_add", "arguments": {"driver": "pc-dimm", "id": "td",
                                                    "memdev": "tdimm"}})
        layout = {}
        for m in re.finditer(r"([0-9a-f]+)-([0-9a-f]+) \(prio -?\d+, ram\): alias "
                             r"ram-(below|above)-4g", mtree["return"]):
            layout[m.group(3)] = (int(m.group(1), 16), int(m.group(2), 16) + 1)
        layout["dimm"] = dimm.get("error") or dimm_obj.get("error")
        qmp(sock, {"execute": "quit"})
        proc.wait(timeout=30)
        return layout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for f in shms:
            try:
                os.unlink(f)
            except OSError:
                pass
        subprocess.run(["rm", "-rf", d])


def test_command_lines_start_in_qemu_with_the_layout_the_tests_assume(cmdlines):
    distinct = {}
    for (label, accel), (opts, argv) in cmdlines.items():
        key = " ".join(re.sub(r"/tmp/memhp-vm-[A-Za-z0-9_]+", "SOCK", x) for x in argv)
        distinct.setdefault(key, (label, accel, opts, argv))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futs = {k: pool.submit(start_paused, v[3]) for k, v in distinct.items()}
        results = {k: f.result() for k, f in futs.items()}
    for key, layout in results.items():
        label, accel, opts, argv = distinct[key]
        assert "error" not in layout, (label, accel, layout.get("error"))
        assert layout["dimm"] is None, (label, accel, "pc-dimm hot-add refused", layout["dimm"])
        m = re.search(r"(?:^| )mem=(\d+)G", " ".join(values_of(argv, "-append")))
        if m:
            # mem=NG must end boot memory exactly where RAM below 4G ends,
            # so that all it hides is the RAM above 4G.
            assert layout["below"] == (0, int(m.group(1)) * GiB), (label, layout)
            assert layout["above"][0] == 4 * GiB, (label, layout)


def test_qemu_option_runs_that_binary_with_the_same_command_line(tmp_path):
    """memhp-vm --qemu PATH: the guest's QEMU is PATH (make qemu-fixed's
    build), every option as with the QEMU on PATH."""
    vm = os.path.join(TESTING, "vm", "memhp-vm")
    # A ~ in the path, as make qemu-fixed's has: vng quotes it.
    (tmp_path / "q~1").mkdir()
    fake = tmp_path / "q~1" / "qemu-system-x86_64"
    os.symlink(shutil.which("qemu-system-x86_64"), fake)
    for accel in ("kvm", "tcg"):
        stock = print_cmd([vm, "--print-cmd", accel, "--", "true"])
        other = print_cmd([vm, "--qemu", str(fake), "--print-cmd", accel, "--", "true"])
        assert other[0] == str(fake), other[0]
        strip = [re.sub(r"/tmp/(memhp-vm-|virtme_ret)[^/,]*", "SOCK", a) for a in stock[1:]]
        assert [re.sub(r"/tmp/(memhp-vm-|virtme_ret)[^/,]*", "SOCK", a) for a in other[1:]] == strip


def test_qemu_option_refuses_what_is_not_a_program(tmp_path):
    vm = os.path.join(TESTING, "vm", "memhp-vm")
    r = subprocess.run([vm, "--qemu", str(tmp_path / "none"), "--print-cmd", "tcg", "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not an executable file" in r.stderr
