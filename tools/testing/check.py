#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make check's entry point: memhp_host.check (python3 check.py --help)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from memhp_host import enter_lab  # noqa: E402

if __name__ == "__main__":
    enter_lab(__file__, sys.argv)
from memhp_host.check import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
