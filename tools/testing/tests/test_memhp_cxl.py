# SPDX-License-Identifier: GPL-2.0
"""memhp-cxl's ZONE_NORMAL onlining order, on a fake memory sysfs.

The node's first memory starts its kswapd and kcompactd; the order must
give the node movable memory first, keep it with memory throughout, and
end with every block in ZONE_NORMAL (memhp-cxl's online_normal()).
"""

import os

import pytest

from conftest import TESTING, load_script


class FakeMemory:
    """memoryN/state and valid_zones that follow writes, with a log."""

    def __init__(self, root, blocks):
        self.root, self.log = root, []
        for b in blocks:
            os.makedirs(os.path.join(root, f"memory{b}"))
            self.set(b, "offline", "Normal Movable")

    def set(self, b, state, zones):
        for name, value in (("state", state), ("valid_zones", zones)):
            with open(os.path.join(self.root, f"memory{b}", name), "w") as f:
                f.write(value + "\n")

    def write(self, path, value):
        b = int(os.path.basename(os.path.dirname(path))[len("memory"):])
        self.log.append((b, value))
        if value == "online_movable":
            self.set(b, "online", "Movable")
        elif value == "online_kernel":
            self.set(b, "online", "Normal")
        elif value == "offline":
            self.set(b, "offline", "Normal Movable")

    def online(self):
        """Blocks online after each step of the log."""
        on, out = set(), []
        for b, v in self.log:
            (on.discard if v == "offline" else on.add)(b)
            out.append(len(on))
        return out


@pytest.fixture
def cxl(tmp_path, monkeypatch):
    mod = load_script(os.path.join(TESTING, "guest", "memhp-cxl"), "memhp_cxl")
    mem = FakeMemory(str(tmp_path), [114, 115, 116, 117])
    monkeypatch.setattr(mod, "MEMORY", str(tmp_path))
    monkeypatch.setattr(mod, "write", mem.write)

    def offline_block(b, seconds):
        mem.write(f"{tmp_path}/memory{b}/state", "offline")
    monkeypatch.setattr(mod, "offline_block", offline_block)
    return mod, mem


def test_first_block_movable_first_then_normal(cxl):
    mod, mem = cxl
    mod.online_normal([114, 115, 116, 117])
    assert mem.log[0] == (114, "online_movable")
    assert mem.log[1:4] == [(115, "online_kernel"), (116, "online_kernel"), (117, "online_kernel")]
    assert mem.log[4:] == [(114, "offline"), (114, "online_kernel")]
    assert [mod.zone_of(b) for b in (114, 115, 116, 117)] == ["Normal"] * 4


def test_node_never_without_memory(cxl):
    """Once the first block is online, some block stays online: the
    node's kthreads are not stopped and created again."""
    mod, mem = cxl
    mod.online_normal([114, 115, 116, 117])
    assert min(mem.online()) >= 1


def test_first_block_that_will_not_go_offline_fails(cxl, monkeypatch):
    mod, mem = cxl
    monkeypatch.setattr(mod, "offline_block", lambda b, s: "Device or resource busy")
    with pytest.raises(mod.Fail, match="memory114 .*cannot go offline"):
        mod.online_normal([114, 115, 116, 117])


def test_one_block_is_onlined_normal_as_is(cxl):
    mod, mem = cxl
    mod.online_normal([114])
    assert mem.log == [(114, "online_kernel")]


def test_only_offline_blocks_are_onlined(cxl):
    mod, mem = cxl
    mem.set(114, "online", "Normal")
    mod.online_normal([114, 115, 116, 117])
    assert mem.log[0] == (115, "online_movable")
    assert (114, "online_kernel") not in mem.log
