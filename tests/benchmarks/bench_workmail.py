"""Benchmark: what answering boto3's message flow calls costs (fnkit/mail/_workmail.py).

1. Putting the bridge in place, once per process, each in a fresh interpreter: when botocore
   is not loaded yet (a finder is armed, nothing imported), and when boto3 is loaded with
   clients already made (the bridge joins botocore's built-in handlers and every existing
   session and client, found by one pass over the live objects; the object count is printed).
2. Per mail invocation, in-process, trivial handler: `mail.run` as it is, and the bridge's
   own share (entering `bridged` once the bridge is armed).
3. One read of the message in flight: `context.message_content` against
   `boto3.client("workmailmessageflow").get_raw_message_content` answered by the bridge.
Medians of interleaved rounds. Pass --quick for a 10x smaller run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUICK = "--quick" in sys.argv
CALLS = 200 if QUICK else 2000
ROUNDS = 5
REPO_ROOT = Path(__file__).resolve().parents[2]
OFFLINE = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    # a call the bridge does not answer fails here at once, instead of going anywhere
    "AWS_ENDPOINT_URL_WORKMAILMESSAGEFLOW": "http://127.0.0.1:9",
    "AWS_MAX_ATTEMPTS": "1",
}

FIRST_ACTIVATION = """
import gc, json, sys, time
PRELOAD
from fnkit.mail import _workmail
started = time.perf_counter()
_workmail.activate()
took = time.perf_counter() - started
print(json.dumps({"ms": took * 1000, "objects": len(gc.get_objects()), "botocore": "botocore" in sys.modules}))
"""
PRELOADS = {
    "botocore not loaded": "",
    "boto3 loaded, 2 clients made": (
        "import boto3\nflow = boto3.client('workmailmessageflow')\ns3 = boto3.client('s3')\n"
    ),
}


def first_activation(preload: str) -> dict[str, float]:
    code = FIRST_ACTIVATION.replace("PRELOAD", preload)
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **OFFLINE, "PYTHONPATH": str(REPO_ROOT)},
    )
    found: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    print("== putting the bridge in place, once per process (median of 3 fresh interpreters)")
    for name, preload in PRELOADS.items():
        runs = [first_activation(preload) for _ in range(3)]
        ms = statistics.median(r["ms"] for r in runs)
        print(
            f"   {name:30s} {ms:8.2f} ms   ({int(runs[0]['objects']):,} live objects; "
            f"botocore loaded after: {bool(runs[0]['botocore'])})"
        )

    os.environ.update(OFFLINE)
    import boto3  # type: ignore[import-untyped, unused-ignore]

    from fnkit import Context, mail
    from fnkit.mail import _workmail

    store = mail.MessageStore()
    event = mail.build_event(mail_from="alice@example.org", recipients=["bob@example.com"], subject="Hi", store=store)
    message_id = event["messageId"]
    deliver = {"actions": [{"allRecipients": True, "action": {"type": "DEFAULT"}}]}
    flow = boto3.client("workmailmessageflow")

    def trivial(event, context):
        return deliver

    def read_by_context(event, context):
        context.message_content.get_raw_message_content(message_id)
        return deliver

    def read_by_boto3(event, context):
        flow.get_raw_message_content(messageId=message_id)["messageContent"].read()
        return deliver

    _workmail.activate()
    context = Context()

    def per_call_us(step, calls: int) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            step()
        return (time.perf_counter() - started) / calls * 1e6

    def bridged_only() -> None:
        with _workmail.bridged(context, "none"):
            pass

    steps = {
        "mail.run, trivial handler": lambda: mail.run(trivial, event, store=store, isolation="none"),
        "  of which entering the bridge": bridged_only,
        "mail.run, read via context": lambda: mail.run(read_by_context, event, store=store, isolation="none"),
        "mail.run, read via boto3": lambda: mail.run(read_by_boto3, event, store=store, isolation="none"),
    }
    for step in steps.values():  # warm
        step()
    assert mail.run(read_by_boto3, event, store=store, isolation="none").status == "applied"
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(ROUNDS):
        for name, step in steps.items():
            samples[name].append(per_call_us(step, CALLS // ROUNDS))
    print(f"== per mail invocation, in-process (median of {ROUNDS} interleaved rounds of {CALLS // ROUNDS})")
    for name, values in samples.items():
        print(f"   {name:32s} {statistics.median(values):9.1f} us")


if __name__ == "__main__":
    main()
