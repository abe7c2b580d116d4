"""The pytest plugin as a user meets it: registered by installing fnkit, light to load, its header and fixtures.

examples/ (which documents it) runs once, in tools/wheel_smoke.py, with the plugin the wheel registers.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def run_pytest(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # a user's session, without the notebook plugin this project tests its notebooks with (it has nothing to
    # collect there, and importing it costs more than the rest of the session's start)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:nbval", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        check=False,
    )


def test_installing_fnkit_registers_the_plugin():
    found = [e for e in metadata.entry_points(group="pytest11") if e.name == "fnkit"]
    assert [e.value for e in found] == ["fnkit.testing.plugin"]


def test_importing_the_helpers_imports_neither_hypothesis_nor_pandas():
    heavy = "sorted(m for m in ('hypothesis', 'pandas', 'pytest') if m in sys.modules)"
    assert run_python(f"import sys, fnkit.testing; print({heavy})") == "[]"
    assert run_python(f"import sys, fnkit.testing.plugin; print({heavy})") == "['pytest']"
    assert run_python("import sys, fnkit.testing.strategies; print('hypothesis' in sys.modules)") == "True"


def test_without_the_plugin_the_fixtures_are_missing(tmp_path):
    # examples/ runs once, in tools/wheel_smoke.py (with the plugin the wheel registers); here a test of our own
    (tmp_path / "test_orders.py").write_text("def test_good_orders(queue_event):\n    assert queue_event(['a'])\n")
    done = run_pytest("-q", "-p", "no:fnkit", "--rootdir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1
    assert "fixture 'queue_event' not found" in done.stdout


def test_a_failing_user_test_shows_the_outcome_table(tmp_path):
    (tmp_path / "test_service.py").write_text(
        textwrap.dedent("""
        from fnkit.testing import assert_outcome

        def handler(event, context):
            return {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}

        def test_everything_is_deleted(queue_event):
            assert_outcome(handler, queue_event(["first", "second"]), kind="success")
    """)
    )
    done = run_pytest("--rootdir", str(tmp_path), cwd=tmp_path)  # not -q: the header names the plugin
    assert done.returncode == 1
    out = done.stdout
    assert f"fnkit {metadata.version('fnkit')}: fixtures queue_event, mail_event, alb_event" in out
    assert "kind: expected 'success', got 'partial'" in out
    assert "Outcome: partial, rule Q8: Partial failure: 1 listed message returns" in out
    assert "retry" in out and "delete" in out  # the table's action column, one row per record
    assert "assert_outcome(handler" in out and "_assertions.py" not in out  # the user's line, not fnkit's insides


def test_pytest_run_from_another_folder_honours_the_tested_projects_tool_fnkit(tmp_path):
    service = tmp_path / "svc"
    (service / "tests").mkdir(parents=True)
    (service / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n[tool.fnkit]\ndialect = "aws"\n', encoding="utf-8"
    )
    (service / "tests" / "test_spelling.py").write_text(
        textwrap.dedent("""
        from fnkit import alb

        def test_the_projects_dialect(queue_event):
            assert queue_event()["Records"][0]["eventSource"] == "aws:sqs"
            assert alb.build_event()["requestContext"]["elb"]["targetGroupArn"].startswith("arn:aws:")
    """)
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_pytest("-q", str(service / "tests"), cwd=elsewhere)
    assert done.returncode == 0, done.stdout
    # a misspelt key fails the session's events, naming the key and the file
    (service / "pyproject.toml").write_text('[tool.fnkit]\ndialekt = "aws"\n', encoding="utf-8")
    done = run_pytest("-q", str(service / "tests"), cwd=elsewhere)
    assert done.returncode == 1
    assert "[tool.fnkit] has no key 'dialekt'" in done.stdout and str(service / "pyproject.toml") in done.stdout
