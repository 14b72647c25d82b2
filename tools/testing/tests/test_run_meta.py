# SPDX-License-Identifier: GPL-2.0
"""make run's run.json, read back by make run --report-only."""

import json

import pytest

from memhp_host.report import Runs

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
    runs = Runs.load(write(tmp_path, GOOD))
    assert runs.env == {"FULL": "1"} and runs.count == ("on", "COUNT=1")
    assert runs.took == {("6.1.0-1-amd64", "10-hotplug-cycles"): 12.5}
    assert runs.load[("6.1.0-1-amd64", "10-hotplug-cycles")] == (0.5, 1.0)
    assert runs.rss[("6.1.0-1-amd64", "10-hotplug-cycles")] == 410
    assert runs.failures == {("7.3.4+deb13-amd64", "80-scale"): "exit 1"}


def test_what_a_run_saves_it_reads_back(tmp_path):
    runs = Runs.load(write(tmp_path, GOOD))
    path = str(tmp_path / "again" / "run.json")
    runs.save(path)
    again = Runs.load(path)
    assert vars(again) == vars(runs)


def test_a_run_json_without_failures_is_an_error_not_a_clean_report(tmp_path):
    bad = dict(GOOD)
    del bad["failures"]
    with pytest.raises(ValueError, match="run.json.*KeyError"):
        Runs.load(write(tmp_path, bad))


def test_a_run_json_that_does_not_parse_names_the_file(tmp_path):
    path = write(tmp_path, "{not json")
    with pytest.raises(ValueError, match=str(tmp_path)):
        Runs.load(path)


def test_a_malformed_row_is_an_error(tmp_path):
    bad = dict(GOOD, took=[["6.1.0-1-amd64", "10-hotplug-cycles"]])
    with pytest.raises(ValueError):
        Runs.load(write(tmp_path, bad))


def test_a_missing_run_json_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        Runs.load(str(tmp_path / "run.json"))


def test_a_count_that_is_not_mode_and_why_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="count"):
        Runs.load(write(tmp_path, dict(GOOD, count=["on"])))
