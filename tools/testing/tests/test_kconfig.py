# SPDX-License-Identifier: GPL-2.0
"""The suite's kernel config fragment (make kconfig) and the check of a
kernel tree's .config against it (check.py, before its guests boot)."""

import glob
import os
import re

import memhp_host
from memhp_host import check
from memhp_host import kernels as memhp_common

# Symbols the code names that the fragment gets by another name: each
# with why it needs no line of its own.
IMPLIED = {
    "CONFIG_BALLOON_MIGRATION": "7.3's name; CONFIG_VIRTIO_BALLOON selects BALLOON, "
                                "whose migration defaults to y",
}


def code_symbols():
    """CONFIG_ symbols our modules and selftests test for."""
    files = (glob.glob(os.path.join(memhp_host.TOP, "mm", "*.[ch]")) +
             glob.glob(os.path.join(memhp_host.TOP, "drivers", "*", "*.[ch]")) +
             glob.glob(os.path.join(memhp_host.TOP, "include", "*.h")) +
             glob.glob(os.path.join(memhp_host.SELFTESTS, "*.sh")) +
             glob.glob(os.path.join(memhp_host.SELFTESTS, "*.c")))
    syms = set()
    for path in files:
        with open(path, errors="replace") as f:
            syms.update(re.findall(r"\bCONFIG_[A-Z0-9_]+", f.read()))
    return syms


def fragment_symbols():
    return {sym for _, opts in check.fragment_sections() for sym, _ in opts}


def test_the_fragment_is_complete():
    missing = code_symbols() - fragment_symbols() - set(IMPLIED)
    assert not missing, f"named in the code, not in selftests/memhp/config: {sorted(missing)}"


def test_every_section_names_real_tests():
    tests = {os.path.basename(p) for p in glob.glob(os.path.join(memhp_host.SELFTESTS, "*.sh"))}
    tests |= {os.path.basename(p)[:-2] for p in glob.glob(os.path.join(memhp_host.SELFTESTS, "*.c"))}
    sections = check.fragment_sections()
    assert sections[0][0] is None, "the first section is # must"
    for names, opts in sections[1:]:
        assert opts, f"section {names} has no option"
        assert set(names) <= tests, f"no such test: {set(names) - tests}"


def test_a_complete_config_has_no_gap():
    text = "\n".join(f"{s}={'y' if v == 'm' else v}"
                     for _, opts in check.fragment_sections() for s, v in opts)
    assert check.config_gaps(text, check.fragment_sections()) == ([], {})


def test_gaps_name_the_must_haves_and_the_tests():
    sections = [(None, [("CONFIG_A", "y")]),
                (["x.sh", "y.sh"], [("CONFIG_B", "m")]),
                (["y.sh"], [("CONFIG_C", "y")])]
    text = "CONFIG_B=y\n# CONFIG_C is not set\n"
    must, tests = check.config_gaps(text, sections)
    assert must == ["CONFIG_A=y"]
    assert tests == {"y.sh": ["CONFIG_C=y"]}
    assert check.config_gaps("CONFIG_A=y\nCONFIG_B=m\nCONFIG_C=m\n", sections) == \
        ([], {"y.sh": ["CONFIG_C=y"]})


def make_tree(tmp_path, release="7.3.4-memhp-user", config=""):
    tree = tmp_path / "linux"
    (tree / "include" / "config").mkdir(parents=True)
    (tree / "include" / "config" / "kernel.release").write_text(release + "\n")
    (tree / ".config").write_text(config)
    return tree


def test_a_tree_is_selected_by_its_path_and_named_by_its_release(tmp_path):
    tree = make_tree(tmp_path)
    got = memhp_common.select_kernels(f"{tree},6.12", ["6.1.0-56-amd64", "6.12.117+deb12-amd64"])
    assert got == [str(tree), "6.12.117+deb12-amd64"]
    assert memhp_common.release_of(str(tree)) == "7.3.4-memhp-user"
    assert memhp_common.series(str(tree)) == "7.3"
    assert memhp_common.kernel_var(str(tree)) == f"KDIR={tree}"
    assert memhp_common.kernel_var("6.1.0-56-amd64") == "KVER=6.1.0-56-amd64"


def test_a_directory_that_is_no_built_tree_is_refused(tmp_path):
    import pytest
    with pytest.raises(ValueError, match="not a built kernel tree"):
        memhp_common.select_kernels(f"{tmp_path}/nothing", ["6.1.0-56-amd64"])


def test_a_tree_without_a_must_have_option_fails_before_booting(tmp_path):
    tree = make_tree(tmp_path, config="CONFIG_MODULES=y\n")
    leaf = check.check_tree_config(str(tree))
    assert leaf.status == "fail"
    assert "CONFIG_MEMORY_HOTREMOVE=y" in leaf.reason
