"""kit.py's learner commands: the working copy `lab` opens, and `reset` (standard library only, so no .venv needed)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _kit():
    spec = importlib.util.spec_from_file_location("fnkit_kit", ROOT / "kit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kit = _kit()


def _notebook(text: str) -> str:
    return json.dumps(
        {
            "cells": [{"cell_type": "markdown", "metadata": {}, "source": text}],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A repository in miniature: kit.py and a few pristine notebooks."""
    shutil.copy(ROOT / "kit.py", tmp_path / "kit.py")
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "kit.py", tmp_path / "notebooks" / "kit.py")  # what work/kit.py is
    for rel in ["00_start_here.ipynb", "01_queue_batch.ipynb", "exercises/01_queue.ipynb", "solutions/01_queue.ipynb"]:
        path = tmp_path / "notebooks" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_notebook(f"pristine {rel}"), encoding="utf-8")
    (tmp_path / "notebooks" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "notebooks" / ".ipynb_checkpoints" / "00_start_here-checkpoint.ipynb").write_text("{}")
    return tmp_path


def test_the_first_copy_takes_every_notebook_and_later_ones_only_the_new(course):
    pristine, work = course / "notebooks", course / "work"
    copied = kit.copy_new_notebooks(pristine, work)
    assert [p.as_posix() for p in copied] == [
        "00_start_here.ipynb",
        "01_queue_batch.ipynb",
        "exercises/01_queue.ipynb",
        "solutions/01_queue.ipynb",
    ]
    (work / "exercises" / "01_queue.ipynb").write_text(_notebook("my answer"), encoding="utf-8")
    (pristine / "exercises" / "01_queue.ipynb").write_text(_notebook("upstream fix"), encoding="utf-8")
    (pristine / "05_new.ipynb").write_text(_notebook("a new lesson"), encoding="utf-8")
    assert [p.as_posix() for p in kit.copy_new_notebooks(pristine, work)] == ["05_new.ipynb"]
    assert "my answer" in (work / "exercises" / "01_queue.ipynb").read_text()  # never overwritten
    assert kit.copy_new_notebooks(pristine, work) == []


def test_names_match_a_path_a_file_name_or_a_stem(course):
    pristine = course / "notebooks"
    assert [p.as_posix() for p in kit.match_notebooks(pristine, ["exercises/01_queue"])] == ["exercises/01_queue.ipynb"]
    assert [p.as_posix() for p in kit.match_notebooks(pristine, ["00_start_here.ipynb"])] == ["00_start_here.ipynb"]
    assert [p.as_posix() for p in kit.match_notebooks(pristine, ["work/01_queue_batch"])] == ["01_queue_batch.ipynb"]
    assert len(kit.match_notebooks(pristine, [])) == 4
    with pytest.raises(
        ValueError, match=re.escape("could be any of exercises/01_queue.ipynb, solutions/01_queue.ipynb")
    ):
        kit.match_notebooks(pristine, ["01_queue"])
    with pytest.raises(
        ValueError, match=re.escape("no notebook is called 'nope'; the notebooks are: 00_start_here.ipynb")
    ):
        kit.match_notebooks(pristine, ["nope"])


def test_reset_puts_the_pristine_copy_back_and_keeps_the_learners(course):
    pristine, work = course / "notebooks", course / "work"
    kit.copy_new_notebooks(pristine, work)
    mine = work / "exercises" / "01_queue.ipynb"
    mine.write_text(_notebook("my answer"), encoding="utf-8")
    done = kit.reset_notebooks(pristine, work, [Path("exercises/01_queue.ipynb")], "stamp")
    assert done == [(Path("exercises/01_queue.ipynb"), work / ".backup" / "stamp" / "exercises" / "01_queue.ipynb")]
    assert "pristine" in mine.read_text() and "my answer" in done[0][1].read_text()
    (work / "00_start_here.ipynb").unlink()
    assert kit.reset_notebooks(pristine, work, [Path("00_start_here.ipynb")], "later") == [
        (Path("00_start_here.ipynb"), None)
    ]
    assert kit.notebooks_in(work) == kit.notebooks_in(pristine)  # backups are not notebooks of the course


def _kit_cli(course: Path, *args: str, answer: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "kit.py", *args], input=answer, capture_output=True, text=True, cwd=cwd or course, check=False
    )


def test_the_reset_command_says_what_it_replaced_and_where_the_old_copy_is(course):
    first = _kit_cli(course, "reset")  # no working copy yet: every notebook, fresh
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("a fresh copy (there was none)") == 4
    (course / "work" / "exercises" / "01_queue.ipynb").write_text(_notebook("my answer"), encoding="utf-8")
    done = _kit_cli(course, "reset", "exercises/01_queue")
    assert done.returncode == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if "work/exercises/01_queue.ipynb" in ln)
    assert "replaced by a fresh copy; yours is kept in work/.backup/" in line
    kept = course / line.split("yours is kept in ")[1]
    assert "my answer" in kept.read_text()
    assert "pristine" in (course / "work" / "exercises" / "01_queue.ipynb").read_text()
    assert "File → Reload Notebook from Disk" in done.stdout


def test_resetting_every_notebook_asks_first_unless_yes(course):
    kit.copy_new_notebooks(course / "notebooks", course / "work")
    mine = course / "work" / "exercises" / "01_queue.ipynb"
    mine.write_text(_notebook("my answer"), encoding="utf-8")
    for answer in ("", "n\n", "no\n"):
        refused = _kit_cli(course, "reset", answer=answer)
        assert "Reset all 4 notebooks of work/? [y/N]" in refused.stdout
        assert refused.returncode == 1 and "nothing was reset" in refused.stderr and "--yes" in refused.stderr
        assert "my answer" in mine.read_text()
    agreed = _kit_cli(course, "reset", answer="y\n")
    assert agreed.returncode == 0 and agreed.stdout.count("replaced by a fresh copy") == 4
    mine.write_text(_notebook("my answer again"), encoding="utf-8")
    told = _kit_cli(course, "reset", "--yes")
    assert told.returncode == 0 and "[y/N]" not in told.stdout and "pristine" in mine.read_text()
    named = _kit_cli(course, "reset", "exercises/01_queue")  # a name: no question
    assert named.returncode == 0 and "[y/N]" not in named.stdout


def test_reset_works_from_the_working_copy_where_jupyterlabs_terminal_opens(course):
    kit.prepare_work_copy(course / "notebooks", course / "work")
    mine = course / "work" / "exercises" / "01_queue.ipynb"
    mine.write_text(_notebook("my answer"), encoding="utf-8")
    done = _kit_cli(course, "reset", "exercises/01_queue", cwd=course / "work")
    assert done.returncode == 0, done.stderr
    assert "work/exercises/01_queue.ipynb: replaced by a fresh copy" in done.stdout
    assert "pristine" in mine.read_text()
    assert not (course / "work" / "work").exists()  # the repository's work/, not one inside it
    assert kit.notebooks_in(course / "work") == kit.notebooks_in(course / "notebooks")


def test_the_reset_command_refuses_an_unknown_or_ambiguous_name(course):
    unknown = _kit_cli(course, "reset", "99_nothing")
    assert unknown.returncode == 2 and "no notebook is called '99_nothing'" in unknown.stderr
    ambiguous = _kit_cli(course, "reset", "01_queue")
    assert ambiguous.returncode == 2 and "name one of them" in ambiguous.stderr
    assert not (course / "work").exists()  # nothing touched


def test_the_usage_lists_the_learner_commands(course):
    usage = _kit_cli(course, "--help")
    assert usage.returncode == 0 and usage.stderr == ""  # on stdout: `python3 kit.py --help | less` works
    assert "python3 kit.py lab" in usage.stdout and "python3 kit.py reset [NOTEBOOK...]" in usage.stdout
    wrong = _kit_cli(course, "labb")
    assert wrong.returncode == 2 and "python3 kit.py lab" in wrong.stderr and wrong.stdout == ""


def test_the_install_writes_no_bytecode_and_makes_a_working_copy_anywhere(monkeypatch, tmp_path, capsys):
    # a learner's .venv: pip compiles nothing (Python compiles what is imported), 121 MB less at install
    monkeypatch.setattr(kit, "ROOT", tmp_path)
    monkeypatch.setattr(kit, "VENV", tmp_path / ".venv")
    monkeypatch.setattr(kit, "STAMP", tmp_path / ".venv" / "fnkit-install.json")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / ".venv").mkdir()
    monkeypatch.setattr(kit, "ensure_venv", lambda: None)
    monkeypatch.setattr(kit, "pip_version", lambda: (24, 0))
    ran: list[list[str]] = []
    monkeypatch.setattr(kit, "run", lambda argv, **kwargs: ran.append([str(a) for a in argv]))
    kit.ensure_installed(["lab"])
    pip = ran[-1]
    assert pip[1:4] == ["-m", "pip", "install"] and "--no-compile" in pip and pip[-1] == ".[lab]"
    assert "takes about a minute the first time" in capsys.readouterr().out  # as the README says
    # `lab`'s first step, callable on any folder: what it copied, and it says so
    pristine = tmp_path / "notebooks"
    (pristine / "exercises").mkdir(parents=True)
    for rel in ("00_start_here.ipynb", "exercises/01_queue.ipynb"):
        (pristine / rel).write_text(_notebook(rel), encoding="utf-8")
    copied = kit.prepare_work_copy(pristine, tmp_path / "elsewhere")
    assert [p.as_posix() for p in copied] == ["00_start_here.ipynb", "exercises/01_queue.ipynb"]
    exercise = tmp_path / "elsewhere" / "exercises" / "01_queue.ipynb"
    assert exercise.read_text(encoding="utf-8") == _notebook("exercises/01_queue.ipynb")
    assert "made your working copy: 2 notebooks" in capsys.readouterr().out
    assert kit.prepare_work_copy(pristine, tmp_path / "elsewhere") == []  # nothing new: nothing copied


def test_lab_installs_the_lab_extra_only_and_test_adds_dev(monkeypatch, tmp_path):
    installed: list[list[str]] = []
    monkeypatch.setattr(kit, "ensure_installed", installed.append)
    monkeypatch.setattr(kit, "prepare_work_copy", lambda: None)
    monkeypatch.setattr(kit, "VENV", tmp_path / ".venv")
    started: list[list[str]] = []

    def run_lab(argv, notebook):
        started.append([str(a) for a in argv])
        return 0

    monkeypatch.setattr(kit, "run_lab", run_lab)
    called: list[list[str]] = []

    def call(argv, **kwargs):
        called.append([str(a) for a in argv])
        return 0

    monkeypatch.setattr(kit.subprocess, "call", call)
    with pytest.raises(SystemExit) as exited:
        kit.cmd_lab(["--port", "8899"])
    assert exited.value.code == 0
    assert installed == [["lab"]]  # not dev: no browser, gates, stubs or Dask for a learner
    # it says when the instructor's notebooks changed since the learner's copy (and offers kit.py update)
    assert called == [[str(kit.PYTHON), "-m", "fnkit.workshop", "update", "--check"]]
    argv = started[0]
    # JupyterLab gets the notebook itself: its folder (work/) is the root, and the browser opens on it
    assert argv[3] == str(kit.WORK / "00_start_here.ipynb") and argv[-2:] == ["--port", "8899"]
    assert "--LabApp.news_url=None" in argv  # no news feed fetched
    # nor the popup asking about it: .venv's JupyterLab has the setting answered by default
    overrides = json.loads((tmp_path / ".venv/share/jupyter/lab/settings/overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    installed.clear()
    with pytest.raises(SystemExit):
        kit.cmd_lab(["--with", "dask", "--no-browser"])
    assert installed == [["lab", "dask"]] and started[-1][-1] == "--no-browser"
    installed.clear()
    monkeypatch.setattr(kit, "run_gates", lambda fix=False: 1)
    with pytest.raises(SystemExit):
        kit.cmd_test([])
    assert installed == [["lab", "dev"]]


_FAKE_LAB = """
import sys, time
log = sys.stderr
print("[I ServerApp] Jupyter Server 2.21.1 is running at:", file=log)
print("[I ServerApp] http://localhost:8931/lab?token=abc123", file=log)
print("[I ServerApp]     http://127.0.0.1:8931/lab?token=abc123", file=log)
print("[C ServerApp]", file=log)
print("    Or copy and paste one of these URLs:", file=log)
print("        http://localhost:8931/lab?token=abc123", file=log)
print("        http://127.0.0.1:8931/lab?token=abc123", file=log, flush=True)
time.sleep(1.0)
print("[I ServerApp] Kernel started", file=log, flush=True)
sys.exit(3)
"""


def test_lab_prints_the_notebooks_url_boxed_after_the_servers_log(tmp_path, capfd):
    fake = tmp_path / "fake_lab.py"
    fake.write_text(_FAKE_LAB)
    code = kit.run_lab([sys.executable, fake], "00_start_here.ipynb", quiet_s=0.3)
    out, err = capfd.readouterr()
    assert code == 3  # JupyterLab's exit code is kit.py's
    assert "Jupyter Server 2.21.1 is running at" in err and "Kernel started" in err  # the log passes through
    box = out.strip().splitlines()[-4:]
    assert box[0] == box[-1] and set(box[0]) == {"+", "-"}
    # the URL on a line of its own, with the token, opening the notebook itself
    assert box[2].strip("| ") == "http://127.0.0.1:8931/lab/tree/00_start_here.ipynb?token=abc123"
    assert "00_start_here.ipynb" in box[1]


@pytest.mark.parametrize(
    ("line", "url"),
    [
        ("[I 2026] http://127.0.0.1:8888/lab?token=f00", "http://127.0.0.1:8888/lab/tree/N.ipynb?token=f00"),
        ("        http://localhost:9000/base/lab?token=f00", "http://localhost:9000/base/lab/tree/N.ipynb?token=f00"),
        ("[I 2026] http://127.0.0.1:8888/lab", "http://127.0.0.1:8888/lab/tree/N.ipynb"),  # a password, no token
        ("        file:///root/.local/share/jupyter/runtime/jpserver-1-open.html", None),
        ("[I 2026] Serving notebooks from local directory: /tmp/work", None),
    ],
)
def test_the_notebooks_url_is_read_from_the_servers_log_line(line, url):
    assert kit.notebook_url(line, "N.ipynb") == url


def test_git_ignores_the_working_copy():
    assert "/work/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_a_kit_command_started_with_ctrl_c_ignored_gives_its_children_ctrl_c_back(tmp_path):
    # `python3 kit.py test &`, nohup and some CI runners start it with SIGINT ignored; the servers,
    # kernels and tests it starts must still stop on Ctrl-C (three tests send it)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import signal, subprocess, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('fnkit_kit', {str(ROOT / 'kit.py')!r})\n"
        "kit = importlib.util.module_from_spec(spec); spec.loader.exec_module(kit)\n"
        "child = [sys.executable, '-c', 'import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)']\n"
        "kit.COMMANDS['probe'] = lambda argv: subprocess.run(child, check=True)\n"
        "kit.main(['probe'])\n"
    )
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_news_setting_joins_what_jupyterlabs_defaults_already_hold(tmp_path):
    path = tmp_path / "share/jupyter/lab/settings/overrides.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}))
    kit.quiet_lab_settings(tmp_path)
    kit.quiet_lab_settings(tmp_path)  # twice: the same file
    held = json.loads(path.read_text())
    assert held["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    assert held["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}
    assert held["@jupyterlab/filebrowser-extension:browser"] == {"showLastModifiedColumn": False}


# --- `kit.py test`: the suite over the cores, the wheel smoke test beside it -----------------------------


@pytest.mark.parametrize(
    ("args", "parallel"),
    [
        ([], True),
        (["-k", "queue", "-x"], True),
        (["-n", "0"], False),  # the user's own count of workers, none here
        (["-n4"], False),
        (["--numprocesses=3"], False),
        (["--pdb"], False),  # a debugger needs the test in this terminal's process
        (["-p", "no:xdist"], False),
    ],
)
def test_the_suite_runs_over_the_cores_unless_the_arguments_say_otherwise(args, parallel):
    workers = ["-n", "auto", "--dist", "loadfile"]
    argv = [str(word) for word in kit.suite_argv(args)]
    assert argv[argv.index("-m") : argv.index("-m") + 3] == ["-m", "pytest", "tests"]
    ours, theirs = argv[: len(argv) - len(args)], argv[len(argv) - len(args) :]
    assert theirs == args  # the user's arguments come last, unchanged
    assert (ours[-4:] == workers) is parallel
    assert "auto" not in [str(word) for word in kit.suite_argv(args, parallel=False)]  # `kit.py cover`


@pytest.mark.parametrize(
    ("suite_exit", "smoke_exit", "exit_code"),
    [
        (0, 0, 0),
        (1, 0, 1),  # a failed test: pytest's code
        (0, 3, 1),  # every test passed, the wheel did not: the run fails, with the smoke test's output
        (5, 0, 5),  # no test selected (-k nothing): still pytest's code
    ],
)
def test_the_wheel_smoke_test_runs_beside_the_suite_and_fails_the_run_when_it_fails(
    monkeypatch, tmp_path, capsys, suite_exit, smoke_exit, exit_code
):
    started = tmp_path / "smoke-started"
    last = "step 2 failed" if smoke_exit else "== wheel: fnkit works"
    smoke = f"import pathlib, sys; pathlib.Path({str(started)!r}).touch(); print('step 1 ok'); print({last!r})"
    smoke += f"; sys.exit({smoke_exit})"
    monkeypatch.setattr(
        kit, "start_wheel_smoke_test", lambda log: subprocess.Popen([sys.executable, "-c", smoke], stdout=log)
    )
    # the suite waits for the smoke test to have started: they run side by side, not one after the other
    suite = (
        f"import pathlib, sys, time; deadline = time.monotonic() + 60\n"
        f"while not pathlib.Path({str(started)!r}).exists() and time.monotonic() < deadline: time.sleep(0.05)\n"
        f"sys.exit({suite_exit} if pathlib.Path({str(started)!r}).exists() else 9)"
    )
    assert kit.run_suite_beside_wheel_smoke([sys.executable, "-c", suite]) == exit_code
    out = capsys.readouterr().out
    if smoke_exit:  # its whole output, then the verdict
        assert (
            "step 1 ok\nstep 2 failed\n" in out and out.splitlines()[-1] == "== wheel smoke test failed (exit code 3)"
        )
    else:  # its last line closes the run, the rest is not shown
        assert out.splitlines()[-1] == "== wheel: fnkit works" and "step 1 ok" not in out


def test_an_interrupted_suite_stops_the_wheel_smoke_test(monkeypatch, tmp_path):
    smoke: list[subprocess.Popen[bytes]] = []

    def start(log):
        smoke.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], stdout=log))
        return smoke[0]

    monkeypatch.setattr(kit, "start_wheel_smoke_test", start)
    assert kit.run_suite_beside_wheel_smoke([sys.executable, "-c", "import sys; sys.exit(2)"]) == 2
    assert smoke[0].poll() is not None  # not left running for two minutes
