"""Handlers that call the mail service's message flow API through boto3 run unchanged (M9).

The provider's templates read and replace the message in flight with a boto3 client::

    flow = boto3.client("workmailmessageflow")
    raw = flow.get_raw_message_content(messageId=event["messageId"])["messageContent"].read()
    s3.put_object(Bucket=bucket, Key=key, Body=updated)
    flow.put_raw_message_content(messageId=event["messageId"], content={"s3Reference": {"bucket": bucket, "key": key}})

While a mail invocation runs (`fnkit.mail.run`, `MailRule.run`, `serve-mail`), fnkit answers
those two calls itself, from the simulated message store, through the same content API as
`context.message_content`: the same MIME checks and M9 rules apply, and their refusals come
back as the service's own errors (`ResourceNotFoundException`, `MessageFrozen`,
`MessageRejected`; `InvalidContentLocation` when the S3 object cannot be read). A put reads
its `s3Reference` with boto3's S3 client as the handler's process sees S3 (moto's, when moto
is active there). Outside a mail invocation the call goes on as usual (to the service, or to
moto).

How the answer reaches every client: botocore hands each client its own copy of its session's
event handlers, made when the client is made, and each session copies botocore's built-in
handlers when it is made. So on the first mail invocation in a process (in a worker process
too), fnkit makes sure the bridge is among the built-in handlers before any session exists:
if botocore is loaded already, it adds the bridge there and to every session and message
flow client already made (found once among the live objects: the clients a template makes
when its module is imported); if not, it adds it the moment botocore's handlers module is
loaded (a one-shot finder first on `sys.meta_path`). fnkit itself never imports botocore,
and when botocore is not installed nothing changes.
"""

from __future__ import annotations

import contextvars
import io
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType

from ._content import (
    MESSAGE_CONTENT,
    InvalidContentError,
    MessageContentError,
    MessageFrozenError,
    MessageNotFoundError,
)

SERVICE = "workmailmessageflow"  # botocore's hyphenized service id, as its event names spell it
_PARAMS = "fnkit.workmail.params"  # where a call's own parameters wait for its before-call event
_UNIQUE_ID = "fnkit-workmail-bridge"
_HANDLERS_MODULE = "botocore.handlers"  # holds BUILTIN_HANDLERS; botocore.session imports it before any session

# The errors the service's API model names for these two operations, and their HTTP status.
ERROR_STATUS = {
    "ResourceNotFoundException": 404,
    "MessageFrozen": 400,
    "MessageRejected": 400,
    "InvalidContentLocation": 400,
}

# "available": botocore can be imported here; "armed": the bridge is in place, or will be when botocore loads
_state: dict[str, bool] = {}
_install_lock = threading.RLock()

# Until `fnkit._running.inprocess.current_context` exists: the context of the mail invocation running in
# this thread, set by `bridged` around an in-process call (see `running_context`).
_running: contextvars.ContextVar[Any] = contextvars.ContextVar("fnkit_mail_invocation", default=None)


def available() -> bool:
    """Whether botocore can be imported here (asked once; nothing is imported to answer)."""
    found = _state.get("available")
    if found is None:
        try:
            found = find_spec("botocore") is not None
        except (ImportError, ValueError):  # a None entry in sys.modules (botocore blocked), or a broken one
            found = False
        _state["available"] = found
    return found


def activate() -> bool:
    """Make sure every message flow client of this process reaches the bridge (once); False without botocore."""
    if _state.get("armed"):
        return True
    if not available():
        return False
    with _install_lock:
        if not _state.get("armed"):
            handlers = sys.modules.get(_HANDLERS_MODULE)
            if handlers is not None and hasattr(handlers, "BUILTIN_HANDLERS"):
                _install(handlers)
                _reach_existing()
            else:
                sys.meta_path.insert(0, _InstallOnImport())
            _state["armed"] = True
    return True


def _install(handlers: ModuleType) -> None:
    """Add the bridge to botocore's built-in handlers: every session made from now on has it."""
    builtin = handlers.BUILTIN_HANDLERS
    for entry in _EVENTS:
        if entry not in builtin:
            builtin.append(entry)


class _InstallOnImport:
    """First on sys.meta_path until botocore's handlers module is loaded; then adds the bridge to it and leaves."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != _HANDLERS_MODULE:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = find_spec(fullname)  # the finders that would have found it
        if spec is not None and spec.loader is not None:
            spec.loader = cast("Loader", _LoadThenInstall(spec.loader))
        return spec


class _LoadThenInstall:
    """The module's own loader, then the bridge added to what it loaded."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        with _install_lock:
            _install(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code...: tracebacks and inspect ask the loader
        return getattr(self.loader, name)


def _reach_existing() -> None:
    """Register the bridge on every botocore session and message flow client made before it was installed."""
    import gc

    session_module = sys.modules.get("botocore.session")
    client_module = sys.modules.get("botocore.client")
    if session_module is None or client_module is None:  # neither a session nor a client can exist yet
        return
    session_class, client_class = session_module.Session, client_module.BaseClient
    for found in gc.get_objects():  # once per process: about 45 ms with 60,000 live objects
        try:
            if isinstance(found, session_class):
                _register(found)
            elif isinstance(found, client_class) and found.meta.service_model.service_name == SERVICE:
                _register(found.meta.events)
        except Exception:  # noqa: BLE001 - an object half made or half torn down: not ours to fix
            continue


def _register(emitter: Any) -> None:
    # the unique id makes a second registration on the same emitter a no-op
    for event, handler in _EVENTS:
        emitter.register(event, handler, unique_id=f"{_UNIQUE_ID}:{event}")


def running_context() -> Any:
    """The context of the invocation running in this thread (worker), or None outside one."""
    invoke_module = sys.modules.get("fnkit._running.inprocess")
    current = getattr(invoke_module, "current_context", None)
    if current is not None:
        return current()
    return _running.get()


def _running_content() -> Any:
    """The running mail invocation's content API, or None when no mail invocation runs here."""
    return getattr(running_context(), "message_content", None)


class _ActivateInWorker:
    """Carried on a mail invocation's context: unpickled in a worker process, it puts the bridge in place there."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_activated_in_worker, ())


def _activated_in_worker() -> _ActivateInWorker:
    activate()
    return _ActivateInWorker()


@contextmanager
def bridged(context: Any, isolation: str) -> Iterator[None]:
    """Around one mail invocation: message flow calls made by the handler are answered from the store."""
    if not available():
        yield
        return
    if isolation == "process":
        # the handler runs in a worker: the bridge is put in place there, when the context arrives
        context._workmail_bridge = _ActivateInWorker()
        yield
        return
    activate()
    token = _running.set(context)
    try:
        yield
    finally:
        _running.reset(token)


# --- the two operations ------------------------------------------------------------------------


class _Refused(Exception):
    """A call the simulated service refuses: the error code its API model names, and the sentence."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


_CODES: tuple[tuple[type[MessageContentError], str], ...] = (
    (MessageNotFoundError, "ResourceNotFoundException"),
    (MessageFrozenError, "MessageFrozen"),
    (InvalidContentError, "MessageRejected"),
)


def _code_for(exc: MessageContentError) -> str:
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code
    return "MessageRejected"


def remember_params(params: Any, context: Any, **_: Any) -> None:
    """`before-parameter-build`: keep the caller's parameters for the `before-call` answer."""
    if isinstance(context, dict) and _running_content() is not None:
        context[_PARAMS] = dict(params)


def answer(model: Any, context: Any, **_: Any) -> Any:
    """`before-call`: the response (http, parsed) from the message store, or None to let the call go on."""
    content = _running_content()
    params = context.get(_PARAMS) if isinstance(context, dict) else None
    if content is None or params is None:
        return None
    operation = model.name
    message_id = params["messageId"]
    try:
        if operation == "GetRawMessageContent":
            raw = content.get_raw_message_content(message_id)
            return _response(200, {"messageContent": _streaming_body(raw)})
        if operation == "PutRawMessageContent":
            reference = params["content"]["s3Reference"]
            where = _s3_location(reference)
            data = _read_s3(reference, where, context.get("client_region"))
            try:
                content.put_raw_message_content(message_id, data)
            except InvalidContentError as exc:
                why = "; ".join(exc.problems)
                raise _Refused(
                    "MessageRejected", f"The replacement at {where} is not valid MIME ({MESSAGE_CONTENT.id}): {why}."
                ) from None
            return _response(200, {})
    except _Refused as refused:
        return _error(refused.code, refused.message)
    except MessageContentError as exc:
        return _error(_code_for(exc), str(exc))
    return None  # an operation the service added later: not simulated, the call goes on


def _s3_location(reference: dict[str, Any]) -> str:
    version = reference.get("objectVersion")
    return f"s3://{reference['bucket']}/{reference['key']}" + (f"?versionId={version}" if version else "")


def _read_s3(reference: dict[str, Any], where: str, region: str | None) -> bytes:
    """The object's bytes, read as the handler's process sees S3; `_Refused` (InvalidContentLocation) when it cannot."""
    arguments = {"Bucket": reference["bucket"], "Key": reference["key"]}
    if reference.get("objectVersion"):
        arguments["VersionId"] = reference["objectVersion"]
    try:
        s3 = _s3_client(region)
        body = s3.get_object(**arguments)["Body"]
        try:
            data: bytes = body.read()
        finally:
            body.close()
    except Exception as exc:  # noqa: BLE001 - any failure to read is the service's InvalidContentLocation
        response = getattr(exc, "response", None)  # a ClientError's parsed answer
        error = response.get("Error", {}) if isinstance(response, dict) else {}
        why = f"{error.get('Code')}: {error.get('Message')}" if error.get("Code") else f"{type(exc).__name__}: {exc}"
        raise _Refused(
            "InvalidContentLocation",
            f"The replacement could not be read from {where} ({why}); the bucket must be in the region of "
            f"the message flow client ({region or 'none set'}) and readable by the function.",
        ) from None
    return data


def _s3_client(region: str | None) -> Any:
    try:
        boto3 = import_module("boto3")
    except ImportError:  # botocore alone
        return import_module("botocore.session").get_session().create_client("s3", region_name=region)
    return boto3.client("s3", region_name=region)


def _streaming_body(raw: bytes) -> Any:
    body_class = import_module("botocore.response").StreamingBody
    return body_class(io.BytesIO(raw), len(raw))


def _metadata(status: int) -> dict[str, Any]:
    context = running_context()
    request_id = str(getattr(context, "aws_request_id", "")) or "fnkit"
    return {
        "RequestId": request_id,
        "HTTPStatusCode": status,
        "HTTPHeaders": {"x-amzn-requestid": request_id, "content-type": "application/json"},
        "RetryAttempts": 0,
    }


class _NoBody:
    def stream(self, **_: Any) -> Iterator[bytes]:
        yield b""


def _http(status: int) -> Any:
    response_class = import_module("botocore.awsrequest").AWSResponse
    return response_class(f"fnkit://{SERVICE}", status, {"x-amzn-requestid": "fnkit"}, _NoBody())


def _response(status: int, parsed: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    return _http(status), {"ResponseMetadata": _metadata(status), **parsed}


def _error(code: str, message: str) -> tuple[Any, dict[str, Any]]:
    status = ERROR_STATUS.get(code, 400)
    return _http(status), {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": _metadata(status),
        "message": message,
    }


_EVENTS = (
    (f"before-parameter-build.{SERVICE}", remember_params),
    (f"before-call.{SERVICE}", answer),
)
