# SPDX-License-Identifier: GPL-2.0
"""Host-side unit tests: the runner's logic, with no guest (make unit)."""

import importlib.machinery
import importlib.util
import os
import sys

import pytest

TESTING = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
TOP = os.path.realpath(os.path.join(TESTING, "..", ".."))
sys.path.insert(0, TESTING)


def load_script(path, name):
    """A Python script without .py (memhp-vm) as a module."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def memhp_vm():
    return load_script(os.path.join(TESTING, "vm", "memhp-vm"), "memhp_vm")
