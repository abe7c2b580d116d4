"""The workshop's helpers: the environment check of notebook 00, and the exercises' checks.

- `check_environment()`: compares this kernel with pyproject.toml and environment.yml and
  says exactly what to fix.
- `check(exercise_id, handler)`: runs the exercise's hidden cases on your handler and says,
  in a sentence, what is wrong; an unsolved exercise (still holding `...`) is "not done yet".
- `exercises()`: the exercises, by id, with their titles.
- Helpers the exercises' handlers call: `process_order`, `BadOrder`, `park` (queue);
  `attachment_names`, `add_disclaimer`, `EXECUTABLE_EXTENSIONS`, `FORMER_STAFF`,
  `mailbox_full` (mail); and `email_message` to make a deterministic email.
"""

from __future__ import annotations

import ast
import email
import email.policy
import inspect
import json
import re
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterable

CASE_TIMEOUT_S = 2.0

# --- helpers the exercises' handlers call ----------------------------------------------


class BadOrder(ValueError):
    """Raised by `process_order` for an order that cannot be processed."""


_lock = threading.Lock()
_recording: list | None = None  # (what, value) pairs while a check runs
_parked: list | None = None


def process_order(body: str) -> dict:
    """Process one order (a message body such as '{"order": 7, "qty": 2}'); raises BadOrder when it is bad.

    An order is bad when the body is not JSON, not an object, or its qty is not a whole
    number above 0.
    """
    with _lock:
        if _recording is not None:
            _recording.append(body)
    try:
        order = json.loads(body)
    except (TypeError, ValueError):
        raise BadOrder(f"the body is not JSON: {str(body)[:40]!r}") from None
    if not isinstance(order, dict):
        raise BadOrder("the body is not an order object")
    qty = order.get("qty")
    if not isinstance(qty, int) or isinstance(qty, bool) or qty <= 0:
        raise BadOrder(f"order {order.get('order')!r} has qty {qty!r}; it needs a whole number above 0")
    return order


def park(record: dict) -> None:
    """Set a message aside for a person to look at (it will not be retried)."""
    mid = record.get("messageId") if isinstance(record, dict) else None
    with _lock:
        if _parked is not None:
            _parked.append(mid)
            return
    print(f"parked message {mid}")


EXECUTABLE_EXTENSIONS = (".exe", ".bat", ".cmd", ".com", ".js", ".vbs", ".scr", ".msi", ".ps1", ".jar")
DISCLAIMER = "This email was checked by the workshop's mail filter."
FIXED_DATE = "Thu, 01 Jan 2026 09:00:00 +0000"
_ATTACHMENT_BYTES = {".exe": b"MZ\x90\x00 a program", ".pdf": b"%PDF-1.4 a document", ".zip": b"PK\x03\x04 an archive",
                     ".js": b"console.log('hi')", ".txt": b"plain text"}
_MEDIA_TYPES = {".pdf": "application/pdf", ".zip": "application/zip", ".txt": "text/plain", ".png": "image/png",
                ".jpg": "image/jpeg", ".csv": "text/csv", ".html": "text/html", ".docx": "application/octet-stream"}


def email_message(*, mail_from: str = "ada@example.com", to: Iterable[str] = ("bob@example.org",),
                  subject: str = "Hello", body: str = "Hello,\nsee you soon.\n", attachments: Iterable[str] = (),
                  cc: Iterable[str] = ()) -> Any:
    """A small, deterministic email (an `EmailMessage`) with made-up attachments named `attachments`.

    Deterministic: a fixed Date and MIME boundary, so the event built from it (and its
    messageId) is the same run after run.
    """
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["From"] = mail_from
    msg["To"] = ", ".join(to)
    if cc:
        msg["Cc"] = ", ".join(cc)
    msg["Subject"] = subject
    msg["Date"] = FIXED_DATE
    msg.set_content(body)
    for n, name in enumerate(attachments):
        suffix = Path(name).suffix.lower()
        # a fixed table, not the mimetypes module: its answers depend on the machine's /etc/mime.types
        maintype, subtype = _MEDIA_TYPES.get(suffix, "application/octet-stream").split("/", 1)
        msg.add_attachment(_ATTACHMENT_BYTES.get(suffix, b"data"), maintype=maintype, subtype=subtype, filename=name)
    if msg.is_multipart():
        msg.set_boundary("fnkit-boundary-0")
    return msg


def attachment_names(raw: bytes) -> list[str]:
    """The file names of the attachments of a raw RFC 5322 message."""
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    return [part.get_filename() or "" for part in msg.iter_attachments()]


def add_disclaimer(raw: bytes, text: str = DISCLAIMER) -> bytes:
    """The raw message with `text` added at the end of its plain-text body (attachments kept)."""
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",))
    if part is None:
        raise ValueError("the message has no plain-text body to add a disclaimer to")
    content = part.get_content()
    part.set_content(content.rstrip("\n") + "\n\n" + text + "\n")
    if msg.is_multipart():
        msg.set_boundary(msg.get_boundary() or "fnkit-boundary-0")
    return msg.as_bytes(policy=email.policy.SMTP)


def body_text(raw: bytes) -> str:
    """The plain-text body of a raw message ("" when it has none)."""
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",))
    return part.get_content() if part is not None else ""


def has_disclaimer(raw: bytes | None, text: str = DISCLAIMER) -> bool:
    """True when the plain-text body of the raw message holds the disclaimer."""
    if not raw:
        return False
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",))
    return part is not None and text in part.get_content()


# --- "not done yet" -----------------------------------------------------------------------


def placeholder_line(fn: Callable) -> int | None:
    """The line (within its cell or file) of a `...` left in `fn`, or None when there is none."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        trivial = set(code.co_consts) <= {None, Ellipsis, fn.__doc__} and not code.co_names
        return code.co_firstlineno if trivial else None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value is Ellipsis:
            return start + node.lineno - 1 if start else node.lineno
    return None


# --- results -------------------------------------------------------------------------------


@dataclass
class CheckResult:
    """What a check found: `status` ('not done yet', 'passed', 'failed'), `message`, `problems`."""

    exercise: str
    status: str
    message: str
    problems: list[str] = field(default_factory=list)
    cases: int = 0
    passed_cases: int = 0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __str__(self) -> str:
        lines = [f"{self.exercise}: {self.message}"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        colour = {"passed": "#1a7f37", "failed": "#cf222e"}.get(self.status, "#9a6700")
        mark = {"passed": "✔", "failed": "✘"}.get(self.status, "…")
        items = "".join(f"<li>{escape(p)}</li>" for p in self.problems)
        return (f"<div class='fnkit-check fnkit-check-{self.status.replace(' ', '-')}'>"
                f"<b style='color:{colour}'>{mark} {escape(self.exercise)}: {escape(self.message)}</b>"
                + (f"<ul>{items}</ul>" if items else "") + "</div>")


@dataclass
class Case:
    """One hidden case: a name a learner understands, the event, and what the check needs."""

    name: str
    event: dict
    expect: Any = None
    config: dict = field(default_factory=dict)


@dataclass
class Exercise:
    """One exercise: id, source, title, the hidden cases, and the judge of one case."""

    id: str
    source: str
    title: str
    cases: Callable[[], list[Case]]
    judge: Callable[[Callable, Case], str | None]  # None when the case passes, else the sentence

    def check(self, handler: Any) -> CheckResult:
        if handler is None or handler is Ellipsis:
            return CheckResult(self.id, "not done yet", "not done yet: write your handler in the cell above, then run this cell again.")
        if not callable(handler):
            return CheckResult(self.id, "failed", f"the handler is {type(handler).__name__}, not a function: write def handler(event, context): ...")
        line = placeholder_line(handler)
        if line is not None:
            return CheckResult(self.id, "not done yet",
                               f"not done yet: replace the ... in {getattr(handler, '__name__', 'your handler')} (line {line}) with your code, then run this cell again.")
        cases = self.cases()
        problems: list[str] = []
        passed = 0
        for n, case in enumerate(cases, 1):
            try:
                problem = self.judge(handler, case)
            except _Stop as stop:
                return CheckResult(self.id, "failed", f"the check stopped at hidden case {n} of {len(cases)}:",
                                   [f"case '{case.name}': {stop}"], len(cases), passed)
            except Exception as exc:  # noqa: BLE001 - a check must explain, never crash
                problem = f"the check itself failed ({type(exc).__name__}: {exc}); tell the workshop's teacher."
            if problem is None:
                passed += 1
            else:
                problems.append(f"case '{case.name}': {problem}")
        if not problems:
            return CheckResult(self.id, "passed", f"done: all {len(cases)} hidden cases pass.", [], len(cases), passed)
        shown = problems[:3]
        more = len(problems) - len(shown)
        if more > 0:
            shown.append(f"... and {more} more failing case(s).")
        return CheckResult(self.id, "failed", f"{len(cases) - passed} of {len(cases)} hidden cases fail:", shown, len(cases), passed)


class _Stop(Exception):
    """Stop running cases (the handler hangs: running more would only make the learner wait)."""


_EXERCISES: dict[str, Exercise] = {}


def _register(exercise: Exercise) -> Exercise:
    _EXERCISES[exercise.id] = exercise
    return exercise


def exercises() -> dict[str, str]:
    """Every exercise id with its title."""
    return {e.id: e.title for e in _EXERCISES.values()}


def check(exercise_id: str, handler: Any) -> CheckResult:
    """Run the hidden cases of an exercise on `handler`; a result that says what is wrong, in a sentence."""
    exercise = _EXERCISES.get(exercise_id)
    if exercise is None:
        known = ", ".join(_EXERCISES)
        return CheckResult(str(exercise_id), "failed", f"there is no exercise '{exercise_id}'; the exercises are: {known}.")
    return exercise.check(handler)


# --- shared sentences ------------------------------------------------------------------------


def _error_sentence(error: Any) -> str:
    from .widgets._ui import locate_error

    where = locate_error(error.traceback)
    text = f"your handler raised {error.type}" + (f": {error.message}" if error.message else "")
    if where:
        text += f" ({where})"
    return text


def _invocation_problem(invocation: Any) -> str | None:
    """A sentence for a handler that raised or hung; None when it returned."""
    if invocation is None:
        return None
    if invocation.timed_out:
        raise _Stop(f"your handler did not return within {CASE_TIMEOUT_S:g} s; look for a loop that never ends. (The other cases were not run.)")
    if invocation.error is not None:
        hint = ""
        if invocation.error.type == "TypeError" and "'str' and 'int'" in invocation.error.message:
            hint = " Every value in a record's attributes is a string: turn it into a number with int(...) before comparing."
        if invocation.error.type == "TypeError" and "positional argument" in invocation.error.message:
            hint = " A handler takes two arguments: def handler(event, context)."
        return _error_sentence(invocation.error) + "." + hint
    return None


# --- queue exercises ---------------------------------------------------------------------------


def _order(n: int, qty: Any) -> str:
    return json.dumps({"order": n, "qty": qty})


def _ordinal(i: int, n: int) -> str:
    return f"message {i + 1} of {n}"


def _queue_event(bodies: list[str], seed: int, **kwargs: Any) -> dict:
    from . import queue

    return queue.build_event(bodies, seed=seed, **kwargs)


def _queue_cases_partial() -> list[Case]:
    good = [_order(1, 2), _order(2, 1), _order(3, 5)]
    cases = [
        ("three good orders", good),
        ("one bad order in the middle", [_order(1, 2), _order(2, 0), _order(3, 5)]),
        ("every order bad", [_order(1, -1), "not json", _order(3, "two")]),
        ("a body that is not JSON", ["hello", _order(2, 3)]),
        ("one message, bad", [_order(1, 0)]),
        ("ten messages, two bad", [_order(i, 0 if i in (4, 9) else i) for i in range(1, 11)]),
    ]
    out = []
    for seed, (name, bodies) in enumerate(cases, start=11):
        event = _queue_event(bodies, seed)
        bad = [r["messageId"] for r in event["Records"] if not _is_good(r["body"])]
        out.append(Case(name, event, bad))
    return out


def _is_good(body: str) -> bool:
    global _recording
    saved = _recording
    try:
        _recording = None
        process_order(body)
        return True
    except BadOrder:
        return False
    finally:
        _recording = saved


def _run_queue(handler: Callable, case: Case) -> tuple[Any, list[str]]:
    """Run a queue case; (outcome, bodies passed to process_order, in order)."""
    global _recording
    from . import queue

    with _lock:
        _recording = []
    try:
        # thread: process_order and park record their calls in this module's globals (see _recording)
        result = queue.run(handler, case.event, timeout_s=CASE_TIMEOUT_S, isolation="thread", **case.config)
    finally:
        with _lock:
            seen, _recording = _recording, None
    return result, seen


def _response_problem(result: Any) -> str | None:
    """A sentence for a response the platform reads as complete failure, or a lost-failures trap."""
    if result.kind == "failure":
        return (f"the platform reads your response as a complete failure, so every message comes back, "
                f"good ones too: {result.reason}")
    if result.rule == "Q8b":
        return ("your response has no 'batchItemFailures' key (names are case-sensitive), so the platform "
                "deletes every message and the failures you meant to report are lost.")
    return None


def _describe(event: dict, mid: str) -> str:
    recs = event["Records"]
    for i, r in enumerate(recs):
        if r["messageId"] == mid:
            body = r["body"] if len(r["body"]) <= 40 else r["body"][:37] + "..."
            return f"{_ordinal(i, len(recs))} (body {body})"
    return f"'{mid}'"


def _judge_partial(handler: Callable, case: Case) -> str | None:
    result, _ = _run_queue(handler, case)
    problem = _invocation_problem(result.invocation)
    if problem:
        if "BadOrder" in problem:
            problem += " Catch BadOrder around each record, so one bad order does not fail the whole batch."
        return problem
    expected = list(case.expect)
    if not expected and result.kind == "success":
        return None
    problem = _response_problem(result)
    if problem:
        return problem
    failed = set(result.failed_ids)
    for mid in expected:
        if mid not in failed:
            return (f"{_describe(case.event, mid)} failed, but your response does not list it, so the platform "
                    "deletes it: that order is lost.")
    for mid in result.failed_ids:
        if mid not in expected:
            return (f"{_describe(case.event, mid)} was processed fine, but your response lists it, so it comes "
                    "back and is processed twice.")
    return None


_register(Exercise("queue-partial", "queue", "Report partial batch failures", _queue_cases_partial, _judge_partial))


def _queue_cases_fifo() -> list[Case]:
    cases = [
        ("one customer, all good", [_order(1, 1), _order(2, 2), _order(3, 3)], ["a", "a", "a"]),
        ("one customer, second order bad", [_order(1, 1), _order(2, 0), _order(3, 3), _order(4, 1)], ["a", "a", "a", "a"]),
        ("two customers, a's first order bad", [_order(1, 0), _order(2, 2), _order(3, 3), _order(4, 4)], ["a", "b", "a", "b"]),
        ("three customers, b goes bad last", [_order(1, 1), _order(2, 2), _order(3, 3), _order(4, 4), _order(5, 0)], ["a", "b", "c", "a", "b"]),
        ("every order bad", ["x", "y"], ["a", "b"]),
    ]
    out = []
    for seed, (name, bodies, groups) in enumerate(cases, start=31):
        event = _queue_event(bodies, seed, fifo=True, group_ids=groups)
        out.append(Case(name, event))
    return out


def _judge_fifo(handler: Callable, case: Case) -> str | None:
    result, processed = _run_queue(handler, case)
    problem = _invocation_problem(result.invocation)
    if problem:
        if "BadOrder" in problem:
            problem += " Catch BadOrder: a bad order fails its message, not the whole batch."
        return problem
    recs = case.event["Records"]
    groups = [r["attributes"]["MessageGroupId"] for r in recs]
    good = [_is_good(r["body"]) for r in recs]
    required: list[str] = []  # failed, or after a failure of the same group
    stopped: set[str] = set()
    first_bad = next((i for i, g in enumerate(good) if not g), len(recs))
    for i, r in enumerate(recs):
        if groups[i] in stopped or not good[i]:
            stopped.add(groups[i])
            required.append(r["messageId"])
    if not required and result.kind == "success":
        return None
    problem = _response_problem(result)
    if problem:
        return problem
    failed = set(result.failed_ids)
    for i, r in enumerate(recs):
        mid = r["messageId"]
        if mid in required and mid not in failed:
            if good[i]:
                return (f"{_describe(case.event, mid)} of customer '{groups[i]}' comes after that customer's failed "
                        "order but is not listed, so it is deleted and the customer's orders are processed out of "
                        "order. List every later message of a group once one of its messages fails.")
            return f"{_describe(case.event, mid)} failed, but your response does not list it, so the platform deletes it: that order is lost."
        if mid not in required and mid in failed and i < first_bad:
            return (f"{_describe(case.event, mid)} came before any failure and was fine, but your response lists it, "
                    "so it comes back and is processed twice.")
    # a message processed after a failure of its group breaks the order even when listed
    for i, r in enumerate(recs):
        if r["messageId"] in required and good[i] and r["body"] in processed:
            before = [j for j in range(i) if groups[j] == groups[i] and not good[j]]
            if before:
                return (f"your handler processed {_describe(case.event, r['messageId'])} of customer '{groups[i]}' "
                        "after that customer's earlier order failed: stop a group at its first failure, and list the rest.")
    return None


_register(Exercise("queue-fifo", "queue", "Keep a FIFO group in order after a failure", _queue_cases_fifo, _judge_fifo))


def _queue_cases_poison() -> list[Case]:
    cases = [
        ("first delivery, one bad order", [_order(1, 1), _order(2, 0)], [1, 1]),
        ("a bad order received for the 3rd time", [_order(1, 1), _order(2, 0), _order(3, 2)], [1, 3, 1]),
        ("a bad order received twice", [_order(1, 0), _order(2, 2)], [2, 1]),
        ("a good order received 5 times", [_order(1, 4)], [5]),
        ("mixed", [_order(1, 0), _order(2, 0), _order(3, 0), _order(4, 1)], [1, 4, 2, 3]),
    ]
    out = []
    for seed, (name, bodies, counts) in enumerate(cases, start=51):
        out.append(Case(name, _queue_event(bodies, seed, receive_counts=counts)))
    return out


def _judge_poison(handler: Callable, case: Case) -> str | None:
    global _parked
    with _lock:
        _parked = []
    try:
        result, _ = _run_queue(handler, case)
    finally:
        with _lock:
            parked, _parked = _parked, None
    problem = _invocation_problem(result.invocation)
    if problem:
        return problem
    recs = case.event["Records"]
    to_list, to_park = [], []
    for r in recs:
        if _is_good(r["body"]):
            continue
        (to_park if int(r["attributes"]["ApproximateReceiveCount"]) >= 3 else to_list).append(r["messageId"])
    problem = _response_problem(result) if (to_list or result.kind == "failure" or result.rule == "Q8b") else None
    if problem:
        return problem
    failed = set(result.failed_ids)
    for r in recs:
        mid, count = r["messageId"], r["attributes"]["ApproximateReceiveCount"]
        if mid in to_park and mid not in parked:
            return (f"{_describe(case.event, mid)} has been received {count} times and failed again: call park(record) "
                    "for it, so a person can look at it.")
        if mid in to_park and mid in failed:
            return (f"{_describe(case.event, mid)} was parked but is still listed, so it comes back again and again: "
                    "leave parked messages out of batchItemFailures.")
        if mid in to_list and mid in parked:
            return (f"{_describe(case.event, mid)} failed on receive {count}, too early to give up: list it so it is "
                    "tried again; park only from the 3rd receive on.")
        if mid in to_list and mid not in failed:
            return f"{_describe(case.event, mid)} failed on receive {count} but is not listed, so it is deleted: that order is lost."
        if mid not in to_list and mid not in to_park and (mid in failed or mid in parked):
            return f"{_describe(case.event, mid)} was processed fine, but your handler {'parked' if mid in parked else 'listed'} it."
    return None


_register(Exercise("queue-poison", "queue", "Give up on a poison message after 3 receives", _queue_cases_poison, _judge_poison))


# --- load balancer exercises ---------------------------------------------------------------------


def _alb_event(seed: int, **kwargs: Any) -> dict:
    from . import alb

    return alb.build_event(seed=seed, **kwargs)


def _run_alb(handler: Callable, case: Case) -> Any:
    from . import alb

    return alb.run(handler, case.event, timeout_s=CASE_TIMEOUT_S)


def _mode(event: dict) -> str:
    return "multi-value headers on" if "multiValueHeaders" in event else "multi-value headers off"


def _http_problem(result: Any) -> str | None:
    problem = _invocation_problem(result.invocation)
    if problem:
        return problem + " The client gets 502 Bad Gateway."
    if result.status == 502:
        return f"the load balancer answers 502 Bad Gateway: {result.explanation}"
    return None


def _ignored_headers(result: Any) -> str | None:
    ignored = [i for i in result.issues if i.code == "ignored"]
    if not ignored:
        return None
    field_ = "multiValueHeaders" if result.multi_value else "headers"
    return f"{ignored[0].message} Answer with '{field_}' when the event has '{field_}'."


def _alb_cases_cookies() -> list[Case]:
    return [
        Case("multi-value headers off", _alb_event(61, method="GET", path="/login")),
        Case("multi-value headers on", _alb_event(62, method="GET", path="/login", multi_value=True)),
        Case("POST, multi-value headers on", _alb_event(63, method="POST", path="/login", body=b"user=ada",
                                                       headers={"content-type": "application/x-www-form-urlencoded"}, multi_value=True)),
    ]


def _judge_cookies(handler: Callable, case: Case) -> str | None:
    result = _run_alb(handler, case)
    problem = _http_problem(result)
    if problem:
        return problem
    mode = _mode(case.event)
    ignored = _ignored_headers(result)
    if ignored:
        return ignored
    if result.status != 200:
        return f"the client gets status {result.status}; answer 200."
    cookies = [c.split(";")[0].strip() for c in result.header_values("set-cookie")]
    want = ["session=abc123", "theme=dark"]
    missing = [c for c in want if c not in cookies]
    if missing:
        got = ", ".join(cookies) if cookies else "no cookie at all"
        hint = ""
        if "off" in mode and len(cookies) == 1:
            hint = (" A dict cannot hold the key 'Set-Cookie' twice: use two keys that differ only in case, such as "
                    "'Set-Cookie' and 'set-cookie'; the load balancer keeps them apart.")
        elif "on" in mode:
            hint = " With multi-value headers on, put both cookies in one list: multiValueHeaders = {'Set-Cookie': [..., ...]}."
        return f"with {mode}, the browser receives {got}, not both session=abc123 and theme=dark.{hint}"
    if result.text != "welcome":
        return f"with {mode}, the body the client reads is {result.text!r}, not 'welcome'."
    return None


_register(Exercise("alb-cookies", "alb", "Set two cookies in both header modes", _alb_cases_cookies, _judge_cookies))


def _alb_cases_greeting() -> list[Case]:
    return [
        Case("a plain name", _alb_event(71, path="/hello", query="name=Ada"), "Hello, Ada!"),
        Case("a name with a space (%20)", _alb_event(72, path="/hello", query="name=Ada%20Lovelace"), "Hello, Ada Lovelace!"),
        Case("an accented name, multi-value on", _alb_event(73, path="/hello", query="name=Ren%C3%A9", multi_value=True), "Hello, René!"),
        Case("the name twice, multi-value on", _alb_event(74, path="/hello", query="name=Ada&name=Grace", multi_value=True), "Hello, Grace!"),
        Case("the name twice, multi-value off", _alb_event(75, path="/hello", query="name=Ada&name=Grace"), "Hello, Grace!"),
        Case("no name", _alb_event(76, path="/hello"), None),
        Case("no name, multi-value on", _alb_event(77, path="/hello", query="lang=en", multi_value=True), None),
    ]


def _judge_greeting(handler: Callable, case: Case) -> str | None:
    result = _run_alb(handler, case)
    problem = _http_problem(result)
    if problem:
        return problem
    mode = _mode(case.event)
    ignored = _ignored_headers(result)
    if ignored:
        return ignored
    if case.expect is None:
        if result.status != 400:
            return f"without a name, answer 400 (the client made a mistake), not {result.status}."
        return None
    if result.status != 200:
        return f"the client gets {result.status} {result.reason}, not 200 OK."
    if result.text != case.expect:
        hint = ""
        if "%" in result.text:
            hint = " Query values arrive exactly as in the URL: decode them with urllib.parse.unquote."
        elif "Ada" in result.text and "Grace" in case.expect:
            hint = " With a repeated key, use the last value, in both modes."
        return f"with {mode}, the body is {result.text!r}, not {case.expect!r}.{hint}"
    kind = (result.header("content-type") or "").split(";")[0].strip().lower()
    if kind != "text/plain":
        return f"the content-type is {kind or 'missing'}; say text/plain."
    return None


_register(Exercise("alb-greeting", "alb", "Greet by a query parameter in both modes", _alb_cases_greeting, _judge_greeting))


def _alb_cases_upper() -> list[Case]:
    return [
        Case("text body", _alb_event(81, method="POST", path="/upper", body=b"hello", headers={"content-type": "text/plain"}), "HELLO"),
        Case("binary content type (base64)", _alb_event(82, method="POST", path="/upper", body=b"abc",
                                                        headers={"content-type": "application/octet-stream"}), "ABC"),
        Case("UTF-8 text", _alb_event(83, method="POST", path="/upper", body="grüße".encode(),
                                                     headers={"content-type": "text/plain; charset=utf-8"}), "GRÜSSE"),
        Case("a content-encoding header (base64)", _alb_event(84, method="POST", path="/upper", body=b"zip",
                                                      headers={"content-type": "text/plain", "content-encoding": "identity"}), "ZIP"),
        Case("empty body", _alb_event(85, method="POST", path="/upper", headers={"content-type": "text/plain"}), ""),
    ]


def _judge_upper(handler: Callable, case: Case) -> str | None:
    result = _run_alb(handler, case)
    problem = _http_problem(result)
    if problem:
        return problem
    if result.status != 200:
        return f"the client gets {result.status} {result.reason}, not 200 OK."
    if result.text != case.expect:
        hint = ""
        if case.event.get("isBase64Encoded"):
            hint = (" This request arrived with isBase64Encoded true: decode the body with base64.b64decode "
                    "before upper-casing it.")
        return f"the client reads {result.text!r}, not {case.expect!r}.{hint}"
    return None


_register(Exercise("alb-upper", "alb", "Upper-case a body that may arrive in base64", _alb_cases_upper, _judge_upper))


# --- mail exercises ------------------------------------------------------------------------------

FORMER_STAFF = frozenset({"dan.old@example.org", "eve.gone@example.org", "walt.retired@example.org",
                          "zoe.left@example.org"})


def mailbox_full(address: str) -> bool:
    """True when the recipient's mailbox is full (in this workshop: addresses starting with 'full')."""
    return isinstance(address, str) and address.lower().startswith("full")


def _mail_event(seed: int, to: list[str], **message: Any) -> dict:
    from . import mail

    return mail.build_event(message=email_message(to=to, **message), seed=seed)


def _run_mail(handler: Callable, case: Case) -> Any:
    from . import mail

    return mail.run(handler, case.event, timeout_s=CASE_TIMEOUT_S)


def _mail_problem(result: Any) -> str | None:
    problem = _invocation_problem(result.invocation)
    if problem:
        return problem + f" The rule then applies its fallback action ({result.fallback_action}) to everyone."
    if result.status == "fallback":
        return f"the rule falls back: {result.reason}"
    return None


def _mail_cases_executables() -> list[Case]:
    two = ["bob@example.org", "carol@example.org"]
    cases = [
        ("a plain email", two, [], False),
        ("a PDF invoice", two, ["invoice.pdf"], False),
        ("a program attached", two, ["setup.exe"], True),
        ("a name in capitals", ["bob@example.org"], ["REPORT.PDF.EXE"], True),
        ("a script among documents", two, ["notes.txt", "run.js"], True),
        ("three recipients and a zip", ["bob@example.org", "carol@example.org", "dan@example.org"], ["photos.zip"], False),
    ]
    return [Case(name, _mail_event(91 + n, to, subject=name, attachments=files), bounce)
            for n, (name, to, files, bounce) in enumerate(cases)]


def _judge_executables(handler: Callable, case: Case) -> str | None:
    result = _run_mail(handler, case)
    problem = _mail_problem(result)
    if problem:
        return problem
    for recipient, decision in result.decisions.items():
        if case.expect and decision.action != "BOUNCE":
            return (f"the mail carries an executable attachment, but {recipient} gets {decision.action}: bounce it "
                    "for every recipient.")
        if case.expect and not decision.bounce_message:
            return "the bounce has no bounceMessage: give one, so the sender learns why the mail was refused."
        if not case.expect and decision.action != "DEFAULT":
            return f"the mail has no executable attachment, but {recipient} gets {decision.action}: deliver it (DEFAULT)."
    if not case.expect and not has_disclaimer(result.delivered_content):
        return ("the delivered mail has no disclaimer: read the raw message with context.message_content."
                "get_raw_message_content(...), add the disclaimer, and put it back with put_raw_message_content(...).")
    if case.expect and result.delivered_content is not None:
        return "a bounced mail is never delivered: no need to change its content."
    return None


def _mail_cases_former_staff() -> list[Case]:
    many = [f"colleague{n}@example.org" for n in range(1, 12)] + sorted(FORMER_STAFF)
    cases = [
        ("nobody has left", ["bob@example.org", "carol@example.org"]),
        ("one former colleague", ["bob@example.org", "dan.old@example.org"]),
        ("an address in capitals", ["Eve.Gone@Example.org", "carol@example.org"]),
        ("only former staff", ["dan.old@example.org", "zoe.left@example.org"]),
        ("fifteen recipients, four gone", many),
    ]
    return [Case(name, _mail_event(101 + n, to, subject=name)) for n, (name, to) in enumerate(cases)]


def _judge_former_staff(handler: Callable, case: Case) -> str | None:
    result = _run_mail(handler, case)
    problem = _mail_problem(result)
    if problem:
        return problem
    for recipient, decision in result.decisions.items():
        gone = recipient.lower() in FORMER_STAFF
        if gone and decision.action != "DROP":
            hint = " Compare addresses in lower case: Eve.Gone@Example.org is eve.gone@example.org." \
                if recipient != recipient.lower() else ""
            return f"{recipient} has left the company, but gets {decision.action}: drop that copy.{hint}"
        if not gone and decision.action != "DEFAULT":
            return f"{recipient} still works here, but gets {decision.action} ({decision.reason}): deliver to them."
    return None


def _mail_cases_full() -> list[Case]:
    cases = [
        ("one full mailbox", ["bob@example.org", "full.ann@example.org", "carol@example.org"]),
        ("no full mailbox", ["bob@example.org", "carol@example.org"]),
        ("twelve full mailboxes", [f"full.{n}@example.org" for n in range(1, 13)] + ["bob@example.org"]),
        ("25 recipients, 11 full", [f"{'full' if n % 2 else 'team'}.{n}@example.org" for n in range(1, 24)]
         + ["bob@example.org", "carol@example.org"]),
    ]
    return [Case(name, _mail_event(111 + n, to, subject=name)) for n, (name, to) in enumerate(cases)]


def _judge_full(handler: Callable, case: Case) -> str | None:
    result = _run_mail(handler, case)
    problem = _mail_problem(result)
    if problem:
        return problem
    for recipient, decision in result.decisions.items():
        if mailbox_full(recipient):
            if decision.action != "BOUNCE":
                if decision.rule == "M6":
                    return (f"{recipient}'s mailbox is full, but the copy gets the fallback action {decision.action}: "
                            "only the first 10 unique actions count (an action's type and parameters make it unique). "
                            "Use one BOUNCE action that lists every full mailbox.")
                return f"{recipient}'s mailbox is full, but gets {decision.action}: bounce that copy."
            if not decision.bounce_message:
                return "the bounce has no bounceMessage: say that the mailbox is full."
        elif decision.action != "DEFAULT":
            return f"{recipient}'s mailbox is fine, but gets {decision.action} ({decision.reason}): deliver to them."
    return None


_register(Exercise("mail-executables", "mail", "Bounce executables, add a disclaimer to the rest",
                   _mail_cases_executables, _judge_executables))
_register(Exercise("mail-former-staff", "mail", "Drop the copies for former staff", _mail_cases_former_staff,
                   _judge_former_staff))
_register(Exercise("mail-full-mailboxes", "mail", "Bounce full mailboxes, however many", _mail_cases_full, _judge_full))


# --- the environment check of notebook 00 -----------------------------------------------------------


@dataclass
class EnvCheck:
    """One line of the environment check."""

    what: str
    needed: str
    found: str
    ok: bool
    fix: str = ""
    severity: str = "error"  # "error": the notebooks need it; "warning": only the tests do


@dataclass
class EnvironmentReport:
    """Every check of `check_environment`, and what to fix first."""

    checks: list[EnvCheck]
    root: Path | None

    @property
    def ok(self) -> bool:
        return all(c.ok or c.severity != "error" for c in self.checks)

    @property
    def problems(self) -> list[EnvCheck]:
        return [c for c in self.checks if not c.ok]

    def details(self) -> str:
        """Every check, one line each, with the versions found."""
        lines = []
        for c in self.checks:
            mark = "✔" if c.ok else ("✘" if c.severity == "error" else "⚠")
            lines.append(f"{mark} {c.what}: needs {c.needed}; found {c.found}")
            if not c.ok and c.fix:
                lines.append(f"    fix: {c.fix}")
        return "\n".join(lines)

    def verdict(self) -> str:
        """One sentence: ready, or how many problems and where to start."""
        errors = [c for c in self.checks if not c.ok and c.severity == "error"]
        warns = [c for c in self.checks if not c.ok and c.severity != "error"]
        if not errors and not warns:
            return ("✔ All checks pass: Python, the packages of pyproject.toml and environment.yml, fnkit from this "
                    "repository, and widgets. Your environment is ready for the workshop.")
        if not errors:
            return f"⚠ The notebooks will work; {len(warns)} warning(s) below (things the tests need, or how the notebook is run)."
        return f"✘ {len(errors)} problem(s) to fix before the workshop; start with the first one."

    def __str__(self) -> str:
        # a healthy environment prints the same on every machine (versions are in details())
        if not self.problems:
            return self.verdict()
        lines = [self.verdict()]
        for c in self.problems:
            mark = "✘" if c.severity == "error" else "⚠"
            lines.append(f"{mark} {c.what}: needs {c.needed}; found {c.found}")
            if c.fix:
                lines.append(f"    fix: {c.fix}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if not self.problems:
            return f"<p style='color:#1a7f37'><b>{escape(self.verdict())}</b></p>"
        rows = []
        for c in self.problems:
            mark, colour = ("✘", "#cf222e") if c.severity == "error" else ("⚠", "#9a6700")
            rows.append(f"<tr><td style='color:{colour}'>{mark}</td><td>{escape(c.what)}</td><td>{escape(c.needed)}</td>"
                        f"<td>{escape(c.found)}</td><td>{escape(c.fix)}</td></tr>")
        return (f"<p><b>{escape(self.verdict())}</b></p>"
                f"<table><tr><th></th><th>what</th><th>needs</th><th>found</th><th>fix</th></tr>{''.join(rows)}</table>")

    def table(self):
        """Every check as a pandas DataFrame (what, needed, found, ok, fix)."""
        import pandas as pd

        return pd.DataFrame([{"what": c.what, "needs": c.needed, "found": c.found, "ok": c.ok, "fix": c.fix}
                             for c in self.checks])


def find_root(start: Path | None = None) -> Path | None:
    """The repository root (the folder holding fnkit's pyproject.toml), or None."""
    here = Path(__file__).resolve().parent.parent
    candidates = [here, *(start or Path.cwd()).resolve().parents, (start or Path.cwd()).resolve()]
    for folder in candidates:
        project = folder / "pyproject.toml"
        if project.is_file() and 'name = "fnkit"' in project.read_text(encoding="utf-8", errors="replace"):
            return folder
    return None


def _installed_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _satisfies(version: str, spec: str) -> bool:
    if not spec:
        return True
    try:
        from packaging.specifiers import SpecifierSet

        return SpecifierSet(spec).contains(version, prereleases=True)
    except ImportError:  # pragma: no cover - packaging comes with JupyterLab
        m = re.match(r">=\s*([\d.]+)$", spec)
        if not m:
            return True
        want = tuple(int(p) for p in m.group(1).split("."))
        have = tuple(int(p) for p in re.findall(r"\d+", version)[: len(want)])
        return have >= want


_REQ = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\[([^\]]*)\])?\s*(.*?)\s*(?:;.*)?$")


def _requirements(pyproject: dict, extra: str, seen: frozenset = frozenset()) -> list[tuple[str, str]]:
    project = pyproject.get("project", {})
    reqs = project.get("dependencies", []) if extra == "" else project.get("optional-dependencies", {}).get(extra, [])
    out: list[tuple[str, str]] = []
    for req in reqs:
        m = _REQ.match(req)
        if not m:
            continue
        name, extras, spec = m.group(1), m.group(2), m.group(3)
        if name.lower() == "fnkit":
            for inner in (extras or "").split(","):
                inner = inner.strip()
                if inner and inner not in seen:
                    out.extend(_requirements(pyproject, inner, seen | {extra}))
        else:
            out.append((name, spec))
    return out


def check_environment(root: str | Path | None = None) -> EnvironmentReport:
    """Compare this kernel's Python and packages with pyproject.toml and environment.yml; say what to fix."""
    import tomllib

    root = Path(root) if root is not None else find_root()
    fix_all = "from the repository's folder run: python3 kit.py lab   (it installs everything into .venv and opens JupyterLab with it)"
    checks: list[EnvCheck] = []
    if root is None:
        checks.append(EnvCheck("project files", "pyproject.toml of fnkit", "not found", False,
                               "open this notebook from the fnkit repository (its notebooks/ folder), after python3 kit.py lab"))
        return EnvironmentReport(checks, None)
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    env_text = (root / "environment.yml").read_text(encoding="utf-8") if (root / "environment.yml").is_file() else ""
    # Python
    needs = pyproject.get("project", {}).get("requires-python", "")
    m = re.search(r"-\s*python\s*([<>=!~]=?\s*[\d.]+)", env_text)
    env_python = m.group(1).replace(" ", "") if m else ""
    have = ".".join(map(str, sys.version_info[:3]))
    spec = ",".join(s for s in {needs, env_python} if s)
    checks.append(EnvCheck("python", f"{spec} (pyproject.toml, environment.yml)", have, _satisfies(have, spec),
                           f"install Python {needs.lstrip('>=')} or newer, then {fix_all}"))
    # packages: what environment.yml installs (extras of the project line), split by who needs them
    m = re.search(r"-e\s+\.\[([^\]]*)\]", env_text)
    extras = [e.strip() for e in (m.group(1) if m else "lab").split(",") if e.strip()]
    notebook_reqs = _requirements(pyproject, "") + _requirements(pyproject, "lab")
    notebook_names = {n.lower() for n, _ in notebook_reqs}
    other = [r for e in extras if e != "lab" for r in _requirements(pyproject, e) if r[0].lower() not in notebook_names]
    seen_names: set[str] = set()
    for (name, spec), severity in [*((r, "error") for r in notebook_reqs), *((r, "warning") for r in other)]:
        if name.lower() in seen_names:
            continue
        seen_names.add(name.lower())
        version = _installed_version(name)
        who = "the notebooks" if severity == "error" else "the tests"
        if version is None:
            checks.append(EnvCheck(name, f"{spec or 'any version'} (for {who})", "not installed", False,
                                   f"{fix_all}; or, in this environment: pip install -e \"{root}[{','.join(extras)}]\"", severity))
        else:
            ok = _satisfies(version, spec)
            checks.append(EnvCheck(name, f"{spec or 'any version'} (for {who})", version, ok,
                                   "" if ok else f"pip install \"{name}{spec}\" in this environment, or {fix_all}", severity))
    # fnkit itself, from this repository
    fnkit_root = Path(__file__).resolve().parent.parent
    same = fnkit_root == root.resolve()
    checks.append(EnvCheck("fnkit", "the copy in this repository", "the copy in this repository" if same else str(fnkit_root), same,
                           f"this kernel imports another copy of fnkit ({fnkit_root}); choose the kernel of {root.name}/.venv, or {fix_all}"))
    # widgets: importable, new enough, the lab extension present, and a kernel that can talk to them
    checks.append(_widgets_check())
    return EnvironmentReport(checks, root)


def _widgets_check() -> EnvCheck:
    try:
        import ipywidgets
    except ImportError:
        return EnvCheck("widgets", "ipywidgets 8 in this kernel", "not installed", False,
                        "pip install \"ipywidgets>=8\" in this environment, then restart the kernel")
    major = int(re.match(r"\d+", ipywidgets.__version__).group(0))
    if major < 8:
        return EnvCheck("widgets", "ipywidgets 8 in this kernel", f"ipywidgets {ipywidgets.__version__}", False,
                        "pip install -U \"ipywidgets>=8\", then restart JupyterLab")
    if _installed_version("jupyterlab_widgets") is None:
        return EnvCheck("widgets", "the JupyterLab widgets extension (jupyterlab_widgets)", "missing", False,
                        "pip install jupyterlab_widgets in the environment that runs JupyterLab, then restart JupyterLab")
    try:
        from IPython import get_ipython

        shell = get_ipython()
        in_kernel = shell is not None and getattr(shell, "kernel", None) is not None
    except ImportError:
        in_kernel = False
    if not in_kernel:
        return EnvCheck("widgets", "a Jupyter kernel to show them", "no kernel (plain Python)", False,
                        "open this notebook in JupyterLab: python3 kit.py lab", "warning")
    return EnvCheck("widgets", "ipywidgets 8 with its JupyterLab extension", "ready in this kernel", True)
