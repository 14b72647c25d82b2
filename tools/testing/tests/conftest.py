# SPDX-License-Identifier: GPL-2.0
"""Host-side unit tests: the runner's logic, with no guest (make unit-py).

A test module that starts QEMU or reads its source is marked `qemu`
(pytestmark); the rest test memhp_host's logic alone, in seconds
(make unit-host: pytest -m "not qemu")."""

import importlib.machinery
import importlib.util
import os
import sys


TESTING = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
TOP = os.path.realpath(os.path.join(TESTING, "..", ".."))
sys.path.insert(0, TESTING)


def load_script(path, name):
    """A Python script without .py (a guest script: memhp-cxl) as a module."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod



def pytest_configure(config):
    config.addinivalue_line("markers", "qemu: starts QEMU (paused, no guest) or reads its "
                            "source: not one of memhp_host's own unit tests")
