# SPDX-License-Identifier: GPL-2.0
"""make run's run.json, read back by run.py --report-only."""

import json

import pytest

import run

GOOD = {"env": {"FULL": "1"}, "count": ["on", "COUNT=1"],
        "took": [["6.1.0-1-amd64", "10-hotplug-cycles", 12.5]],
        "load": [["6.1.0-1-amd64", "10-hotplug-cycles", [0.5, 1.0]]],
        "qemu_rss_mib": [["6.1.0-1-amd64", "10-hotplug-cycles", 410]],
        "failures": [["7.3.4+deb13-amd64", "80-scale", "exit 1"]]}


def write(tmp_path, data):
    path = tmp_path / "run.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_a_run_json_is_read_whole(tmp_path):
    env, count, took, load, rss, failures = run.load_run_meta(write(tmp_path, GOOD))
    assert env == {"FULL": "1"} and count == ["on", "COUNT=1"]
    assert took == {("6.1.0-1-amd64", "10-hotplug-cycles"): 12.5}
    assert load[("6.1.0-1-amd64", "10-hotplug-cycles")] == (0.5, 1.0)
    assert rss[("6.1.0-1-amd64", "10-hotplug-cycles")] == 410
    assert failures == {("7.3.4+deb13-amd64", "80-scale"): "exit 1"}


def test_a_run_json_without_failures_is_an_error_not_a_clean_report(tmp_path):
    bad = dict(GOOD)
    del bad["failures"]
    with pytest.raises(ValueError, match="run.json.*KeyError"):
        run.load_run_meta(write(tmp_path, bad))


def test_a_run_json_that_does_not_parse_names_the_file(tmp_path):
    path = write(tmp_path, "{not json")
    with pytest.raises(ValueError, match=str(tmp_path)):
        run.load_run_meta(path)


def test_a_malformed_row_is_an_error(tmp_path):
    bad = dict(GOOD, took=[["6.1.0-1-amd64", "10-hotplug-cycles"]])
    with pytest.raises(ValueError):
        run.load_run_meta(write(tmp_path, bad))


def test_a_missing_run_json_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        run.load_run_meta(str(tmp_path / "run.json"))
