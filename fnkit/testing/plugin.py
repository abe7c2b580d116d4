"""fnkit's pytest plugin, registered through the `pytest11` entry point: installing fnkit enables it.

Fixtures (one fresh factory per test; each call builds a valid event with the next seed):

- `queue_event(bodies=["message 1"], **keywords)`: `fnkit.queue.build_event`
- `mail_event(mail_from=..., recipients=[...], subject=..., **keywords)`: `fnkit.mail.build_event`
- `alb_event(method="GET", path="/", **keywords)`: `fnkit.alb.build_event`

`[tool.fnkit]` is read from the project pytest runs (its ini file's folder, else its rootdir, and
up), not from the folder pytest was started in.

Ini options (pytest.ini, tox.ini, setup.cfg or `[tool.pytest.ini_options]`): `fnkit_dialect`
("aws" or "provider") and `fnkit_isolation` ("none", "process" or "thread") set the default
of every builder, fixture, strategy and run during the session, above `[tool.fnkit]` and
below the environment (`FNKIT_DIALECT`, `FNKIT_ISOLATION`) and an explicit argument.

Assertions (`assert_valid`, `assert_outcome`) and strategies live in `fnkit.testing`;
`pytest -p no:fnkit` turns the plugin off.
"""

from __future__ import annotations

import pytest

from .._settings.project import INI, set_project_root, set_pytest_ini
from ._factories import AlbEventFactory, MailEventFactory, QueueEventFactory, event_factory


def pytest_addoption(parser: pytest.Parser) -> None:
    """fnkit's ini options: the session's default dialect and isolation."""
    parser.addini(
        INI["dialect"],
        "fnkit's default dialect of built events: 'aws' or 'provider' (below FNKIT_DIALECT, above [tool.fnkit])",
        default="",
    )
    parser.addini(
        INI["isolation"],
        "where fnkit runs handlers by default: 'none', 'process' or 'thread' "
        "(below FNKIT_ISOLATION, above [tool.fnkit])",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The session's ini options become fnkit's defaults while it runs."""
    values = {name: str(config.getini(option)).strip() for name, option in INI.items()}
    set_pytest_ini(values, str(config.inipath or ""))
    # [tool.fnkit] of the project pytest runs, wherever pytest was started from
    set_project_root(config.inipath.parent if config.inipath is not None else config.rootpath)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session is over: its ini options no longer set fnkit's defaults."""
    set_pytest_ini({})
    set_project_root(None)


@pytest.fixture
def queue_event() -> QueueEventFactory:
    """A factory of valid queue batch events: `queue_event(["body 1", "body 2"], fifo=True, ...)`."""
    return event_factory("queue")


@pytest.fixture
def mail_event() -> MailEventFactory:
    """A factory of valid mail-flow events: `mail_event(recipients=["a@example.com"], subject="Hi", ...)`."""
    return event_factory("mail")


@pytest.fixture
def alb_event() -> AlbEventFactory:
    """A factory of valid load balancer events: `alb_event("POST", "/orders", body=b"{}", multi_value=True, ...)`."""
    return event_factory("alb")


def pytest_report_header(config: pytest.Config) -> str:
    """pytest's header line: the fnkit version its fixtures come from."""
    import fnkit

    return f"fnkit {fnkit.__version__}: fixtures queue_event, mail_event, alb_event (fnkit.testing)"
