"""Backends the test run requires (no silent skips).

A test that cannot run because a backend is missing skips with a reason
that names it: "backend <name>: why". TANG_REQUIRED_BACKENDS (a comma
list, set by scripts/test.sh from what the machine must have) turns such a
skip of a required backend into a failure that says why; the others are
listed, with their reasons, at the end of the run.
"""

import collections
import os
import re

import pytest

REQUIRED = {b.strip() for b in
            os.environ.get("TANG_REQUIRED_BACKENDS", "").split(",")
            if b.strip()}
_BACKEND = re.compile(r"backend ([\w-]+): (.*)", re.S)
_skipped = collections.defaultdict(list)


def _reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped:
        return
    m = _BACKEND.search(_reason(report))
    if not m:
        return
    backend, why = m.group(1), m.group(2).strip()
    _skipped[backend].append((item.nodeid, why))
    if backend in REQUIRED:
        report.outcome = "failed"
        report.longrepr = (f"required backend '{backend}' did not run "
                           f"(TANG_REQUIRED_BACKENDS): {why}")


def pytest_terminal_summary(terminalreporter):
    if not _skipped:
        return
    terminalreporter.section("backends that did not run")
    for backend, tests in sorted(_skipped.items()):
        state = "REQUIRED, FAILED" if backend in REQUIRED else "skipped"
        terminalreporter.write_line(
            f"{backend} ({state}): {len(tests)} tests; {tests[0][1]}")
