"""One project setting: [tool.fnkit], the environment and pytest's ini choose the default dialect and isolation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import tomllib
from pathlib import Path

import pytest

import fnkit
from fnkit import alb, mail, queue
from fnkit._settings import project as _settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A service's folder with a pyproject.toml (written by the test), the current directory, no FNKIT_* set."""
    for name in ("FNKIT_DIALECT", "FNKIT_ISOLATION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def spelling(event):
    return fnkit.validate(event).dialect


def test_without_a_setting_events_are_built_in_the_spec_spelling_and_calls_run_in_the_caller(project):
    write(project / "pyproject.toml", '[project]\nname = "orders"\n')
    assert queue.build_event(["x"])["Records"][0]["eventSource"] == "provider:queue"
    assert alb.build_event()["requestContext"]["elb"]["targetGroupArn"].startswith("arn:provider:")
    assert fnkit.invoke(lambda e, c: threading.get_ident(), {}, timeout_s=5).returned == threading.get_ident()


def test_tool_fnkit_sets_the_dialect_of_every_builder_and_the_isolation_of_runs(project):
    write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "aws"\nisolation = "thread"\n')
    (project / "src" / "orders").mkdir(parents=True)
    os.chdir(project / "src" / "orders")  # found from the current directory upward

    event = queue.build_event(["x"], fifo=True)
    assert event["Records"][0]["eventSource"] == "aws:sqs" and spelling(event) == "aws"
    assert queue.queue_arn().startswith("arn:aws:sqs:")
    assert spelling(alb.build_event("POST", "/orders", body=b"{}")) == "aws"
    assert alb.health_check_event()["requestContext"]["elb"]["targetGroupArn"].startswith("arn:aws:")
    assert mail.build_event(mail_from="a@example.org", recipients=["b@example.com"])["envelope"]
    assert queue.QueueSim().dialect == "aws"
    # isolation "thread": the handler runs on a thread of its own, not the caller's (with a timeout to keep)
    assert fnkit.invoke(lambda e, c: threading.get_ident(), {}, timeout_s=5).returned != threading.get_ident()
    assert queue.run(lambda e, c: None, event).kind == "success"


def test_an_argument_wins_over_the_environment_which_wins_over_the_project(project, monkeypatch):
    write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "aws"\nisolation = "thread"\n')
    monkeypatch.setenv("FNKIT_DIALECT", "provider")
    monkeypatch.setenv("FNKIT_ISOLATION", "none")
    assert spelling(queue.build_event(["x"])) == "provider"
    assert spelling(queue.build_event(["x"], dialect="aws")) == "aws"
    assert fnkit.invoke(lambda e, c: threading.get_ident(), {}, timeout_s=5).returned == threading.get_ident()
    assert (
        fnkit.invoke(lambda e, c: threading.get_ident(), {}, timeout_s=5, isolation="thread").returned
        != threading.get_ident()
    )


def test_pytest_ini_sits_between_the_environment_and_the_project(project, monkeypatch):
    write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "provider"\n')
    monkeypatch.setattr(_settings, "_pytest_ini", {"dialect": ("aws", str(project / "pytest.ini"))})
    assert spelling(queue.build_event(["x"])) == "aws"
    monkeypatch.setenv("FNKIT_DIALECT", "provider")
    assert spelling(queue.build_event(["x"])) == "provider"


def test_the_nearest_pyproject_with_a_tool_fnkit_table_counts(project):
    write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "aws"\n')
    inner = project / "libs" / "orders"
    inner.mkdir(parents=True)
    write(inner / "pyproject.toml", '[project]\nname = "orders"\n')  # no [tool.fnkit]: looked past
    os.chdir(inner)
    assert spelling(queue.build_event(["x"])) == "aws"
    write(inner / "pyproject.toml", '[project]\nname = "orders"\n[tool.fnkit]\ndialect = "provider"\n')
    assert spelling(queue.build_event(["x"])) == "provider"


def test_the_file_is_read_once_and_again_when_it_changes(project, monkeypatch):
    path = write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "aws"\n')
    reads = []
    real_load = tomllib.load

    def counted_load(file):
        reads.append(file.name)
        return real_load(file)

    monkeypatch.setattr(tomllib, "load", counted_load)
    for seed in range(5):
        assert spelling(queue.build_event(["x"], seed=seed)) == "aws"
    assert len(reads) == 1
    write(path, '[tool.fnkit]\ndialect = "provider"\n')
    stamp = path.stat().st_mtime_ns + 1_000_000_000  # a later time, whatever the file system's resolution
    os.utime(path, ns=(stamp, stamp))
    assert spelling(queue.build_event(["x"])) == "provider"
    assert len(reads) == 2


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("pyproject", r"\[tool\.fnkit\] dialect in .*pyproject\.toml is 'amazon': expected 'provider'"),
        ("environment", r"the environment variable FNKIT_DIALECT is 'amazon': expected 'provider'"),
        ("ini", r"pytest's ini option fnkit_dialect in .*tox\.ini is 'amazon': expected 'provider'"),
    ],
)
def test_a_bad_dialect_names_where_it_came_from(project, monkeypatch, where, expected):
    if where == "pyproject":
        write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "amazon"\n')
    elif where == "environment":
        monkeypatch.setenv("FNKIT_DIALECT", "amazon")
    else:
        monkeypatch.setattr(_settings, "_pytest_ini", {"dialect": ("amazon", str(project / "tox.ini"))})
    with pytest.raises(ValueError, match=expected):
        queue.build_event(["x"])
    with pytest.raises(ValueError, match=expected):
        alb.build_event()


def test_bad_isolation_and_bad_files_are_errors_that_say_where(project):
    path = write(project / "pyproject.toml", '[tool.fnkit]\nisolation = "docker"\n')
    with pytest.raises(ValueError, match=r"\[tool\.fnkit\] isolation in .* is 'docker': expected 'none'"):
        fnkit.invoke(lambda e, c: None, {})
    write(path, "[tool.fnkit]\ndialect = aws\n")  # not TOML: an unquoted string
    with pytest.raises(ValueError, match=r"pyproject\.toml is not valid TOML"):
        queue.build_event(["x"])
    write(path, '[tool]\nfnkit = "aws"\n')
    with pytest.raises(ValueError, match=r"\[tool\.fnkit\] in .* is 'aws': it is a table"):
        queue.build_event(["x"])
    with pytest.raises(ValueError, match=r"^dialect is 'AWS': expected 'provider'"):
        queue.build_event(["x"], dialect="AWS")  # type: ignore[arg-type]


def _fnkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FNKIT_")}
    environment["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "fnkit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environment, **(env or {})},
        timeout=120,
        check=False,
    )


def test_the_command_line_builds_in_the_projects_dialect(project):
    write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "aws"\n')
    done = _fnkit("event", "build", "alb", "--compact", cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["requestContext"]["elb"]["targetGroupArn"].startswith("arn:aws:")
    done = _fnkit("event", "build", "queue", "--compact", cwd=project, env={"FNKIT_DIALECT": "provider"})
    assert json.loads(done.stdout)["Records"][0]["eventSource"] == "provider:queue"
    done = _fnkit("event", "build", "queue", "--dialect", "provider", "--compact", cwd=project)
    assert json.loads(done.stdout)["Records"][0]["eventSource"] == "provider:queue"


def test_the_command_line_says_in_one_line_which_setting_is_bad(project):
    path = write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "amazon"\n')
    done = _fnkit("event", "build", "queue", cwd=project)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        f"fnkit event build queue: [tool.fnkit] dialect in {path} is 'amazon': "
        "expected 'provider' (the spec's spelling) or 'aws' (the real platform's)"
    )


def test_pytest_ini_options_set_fixtures_and_strategies_for_the_session(project):
    write(project / "pyproject.toml", '[tool.fnkit]\ndialect = "provider"\n')
    write(project / "pytest.ini", "[pytest]\nfnkit_dialect = aws\nfnkit_isolation = thread\n")
    write(
        project / "test_service.py",
        """
        import threading

        import fnkit
        from hypothesis import HealthCheck, given, settings
        from fnkit.testing import strategies

        def test_fixtures_build_in_the_ini_dialect(queue_event, alb_event):
            assert queue_event()["Records"][0]["eventSource"] == "aws:sqs"
            assert alb_event()["requestContext"]["elb"]["targetGroupArn"].startswith("arn:aws:")

        # a busy machine makes the first draws slow (1.3 s once): not what this test is about
        @settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])
        @given(strategies.queue_events())
        def test_strategies_draw_the_ini_dialect_only(event):
            assert {r["eventSource"] for r in event["Records"]} == {"aws:sqs"}

        def test_runs_use_the_ini_isolation(queue_event):
            assert fnkit.invoke(lambda e, c: threading.get_ident(), {}, timeout_s=5).returned != threading.get_ident()

        def test_the_environment_wins_over_the_ini(queue_event, monkeypatch):
            monkeypatch.setenv("FNKIT_DIALECT", "provider")
            assert queue_event()["Records"][0]["eventSource"] == "provider:queue"
        """,
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FNKIT_")}
    environment["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(  # a service's session: without the notebook plugin (1.3 s to import, nothing to collect)
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:nbval", "test_service.py"],
        capture_output=True,
        text=True,
        cwd=project,
        env=environment,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
