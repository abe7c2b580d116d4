"""validate_response and outcome decide from the same rule results: they never disagree (A5-A13, AS4)."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fnkit import Raw, alb, rules
from fnkit.alb._response import deciding_rule

# values of the kinds a handler gets wrong: wrong types, out-of-range codes, odd text
statuses = st.one_of(
    st.integers(min_value=-5, max_value=1_000),
    st.sampled_from([100, 101, 199, 200, 204, 304, 599, 600, 10**20]),
    st.sampled_from(["200", 200.0, True, None, [200]]),
)
texts = st.one_of(
    st.sampled_from(["", "ok", "200 OK", "404 Not Found", "OK\r\nx: 1", "\x00", "é"]), st.text(max_size=6)
)
b64_bodies = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
bodies = st.one_of(texts, b64_bodies, st.sampled_from(["not base64!", "YQ", "YQ==\n", None, 3, {"a": 1}]))
flags = st.one_of(st.booleans(), st.sampled_from(["true", 1, None]))
header_names = st.sampled_from(
    [
        "content-type",
        "Content-Type",
        "x-a",
        "Set-Cookie",
        "set-cookie",
        "Connection",
        "transfer-encoding",
        "content-length",
        "Content-Length",
        "bad name",
        "é",
        "",
    ]
)
header_values = st.one_of(texts, st.sampled_from(["3", "0", "1\r\nx-b: 2", 1, None, True]))
single_headers: st.SearchStrategy[Any] = st.one_of(
    st.dictionaries(header_names, header_values, max_size=4),
    st.sampled_from([None, [], "x", {"x": ["a"]}]),
)
multi_headers: st.SearchStrategy[Any] = st.one_of(
    st.dictionaries(header_names, st.one_of(st.lists(header_values, max_size=3), header_values), max_size=4),
    st.sampled_from([None, [], "x", {"x": "a"}]),
)
FIELDS = {
    "statusCode": statuses,
    "statusDescription": st.one_of(texts, st.sampled_from([200, None])),
    "isBase64Encoded": flags,
    "body": bodies,
    "headers": single_headers,
    "multiValueHeaders": multi_headers,
}


@st.composite
def responses(draw: st.DrawFn) -> Any:
    """A response object: some of the six fields (statusCode mostly there), each maybe of a wrong kind."""
    keys = draw(st.sets(st.sampled_from(sorted(FIELDS)), max_size=6))
    if draw(st.integers(0, 9)):  # statusCode missing one time in ten
        keys.add("statusCode")
    response = {key: draw(FIELDS[key]) for key in sorted(keys)}
    return draw(st.sampled_from([response, response, [response], "ok", None]))  # now and then not an object


EVENT = alb.build_event("GET", "/", seed=1)
HEAD = alb.build_event("HEAD", "/", seed=1)


def _text(response: Any) -> str | None:
    try:
        return json.dumps(response, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


@given(responses(), st.booleans(), st.booleans(), st.booleans())
def test_validate_response_and_outcome_decide_alike(response, multi_value, as_text, head):
    """The correspondence, in both reporting modes (multi-value headers off and on), for the value returned and
    for the same value as the JSON text a function's runtime sends (`Raw`). A `str` means two things by design:
    `validate_response` reads it as JSON text (a file, a captured payload), `outcome` as the string a handler
    returned (which the runtime sends as a JSON string); so a `str` is compared as `Raw(str)`, the text both read:

    - `validate_response` reports an error exactly when `outcome` is the load balancer's 502 (invoked, not ok);
    - the 502's rule is `deciding_rule` of that report (the first error's rule; G0/G1/G2/H2/AS1 cite A6);
    - the outcome carries that very report as its `issues`;
    - without an error the function's answer is delivered: status = statusCode, rule AS4 (A10 for HEAD), and the
      outcome's issues are the report's warnings.
    """
    value: Any = response
    if as_text:
        text = _text(response)
        if text is None:
            return
        value = Raw(text)
    report = alb.validate_response(value, multi_value=multi_value)
    answered = Raw(value) if isinstance(value, str) else value
    out = alb.outcome(HEAD if head else EVENT, answered, multi_value=multi_value)
    assert out.invoked
    assert list(out.issues) == list(report)
    if report.ok:
        assert (out.ok, out.rule) == (True, "A10" if head else "AS4")
        assert out.status == (response["statusCode"] if isinstance(response, dict) else None)
    else:
        assert (out.status, out.ok, out.kind) == (502, False, "error")
        assert out.rule == deciding_rule(report) and out.rule in rules.ids()
        assert report.errors[0].message in out.explanation
