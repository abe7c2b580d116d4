"""Form fields declared as data: one declaration makes the control and converts its value both ways."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._optional import require
from ._ui import field_class, json_problem

if TYPE_CHECKING:
    from .._settings.config import Config, Setting

PLACEHOLDER_CHARS = 32  # what a one-line field shows whole beside its label in a half-width form
KINDS = ("text", "longtext", "lines", "csv", "bool", "choice", "int", "float", "json", "pairs")


class FieldError(ValueError):
    """A form value that cannot become a builder argument; the message is for the learner."""

    def __init__(self, field: Field, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Field:
    """One control of a form: `name` (the keyword it feeds), `label`, `kind`, `default`, `help`."""

    name: str
    label: str
    kind: str
    default: Any = None
    help: str = ""
    options: tuple[Any, ...] = ()
    rows: int = 3
    setting: Setting | None = None  # the configuration setting the field is made from (it checks the value)
    example: str = ""  # a one-line field's placeholder, short enough to show whole (the help is its tooltip)

    # -- Python value <-> control value ------------------------------------------------

    def to_control(self, value: Any) -> Any:
        """The control's value for a Python value (lists become lines, mappings JSON, ...)."""
        kind = self.kind
        if kind == "lines":
            if value is None:
                return ""
            if isinstance(value, str):
                return value
            return "\n".join(v if isinstance(v, str) else json.dumps(v) for v in value)
        if kind == "csv":
            if value is None:
                return ""
            return value if isinstance(value, str) else ", ".join(str(v) for v in value)
        if kind == "json":
            if value is None or value == "":
                return ""
            return value if isinstance(value, str) else json.dumps(value)
        if kind == "pairs":
            if value is None:
                return ""
            if isinstance(value, str):
                return value
            pairs = value.items() if isinstance(value, Mapping) else value
            return "\n".join(f"{k}: {v}" for k, v in pairs)
        if kind == "bool":
            return bool(value)
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "choice":
            if value not in self.options:
                raise ValueError(f"{self.label} must be one of {', '.join(map(repr, self.options))}, not {value!r}")
            return value
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8", "replace")
        return "" if value is None else str(value)

    def from_control(self, value: Any) -> Any:
        """The Python value of a control's value; FieldError (plain words) when it makes no sense."""
        kind = self.kind
        if kind == "lines":
            return [line for line in str(value).splitlines() if line.strip()]
        if kind == "csv":
            items = [part.strip() for part in str(value).split(",")]
            items = [i for i in items if i]
            return items or None
        if kind == "json":
            text = str(value).strip()
            if not text:
                return None
            problem = json_problem(text, f"'{self.label}' field")
            if problem is not None:
                raise FieldError(self, problem.message)
            return json.loads(text)
        if kind == "pairs":
            pairs = []
            for n, line in enumerate(str(value).splitlines(), 1):
                if not line.strip():
                    continue
                name, colon, rest = line.partition(":")
                if not colon or not name.strip():
                    raise FieldError(
                        self,
                        f"Line {n} of '{self.label}' ({line.strip()!r}) is not 'Name: value'; "
                        "write one header per line with a colon after its name.",
                    )
                pairs.append((name.strip(), rest.strip()))
            return pairs
        if kind in ("text", "longtext"):
            value = str(value)
        if self.setting is not None:
            try:
                return self.setting.parse(value) if isinstance(value, str) else self.setting.check(value)
            except ValueError as exc:
                raise FieldError(self, str(exc)) from None
        return value

    # -- the control ---------------------------------------------------------------------

    @property
    def placeholder(self) -> str:
        """What a one-line field shows while empty: its example, or its help when that fits whole."""
        if self.example:
            return self.example
        return self.help if len(self.help) <= PLACEHOLDER_CHARS else ""

    def control(self, value: Any, label_width: str = "130px") -> Any:
        """A fresh ipywidgets control holding `value`, with the field's CSS class; its label `label_width` wide."""
        w = require("ipywidgets", extra="widgets", feature="fnkit.widgets")

        common = dict(
            description=self.label,
            tooltip=self.help or None,
            style={"description_width": label_width},
            layout=w.Layout(width="98%"),
        )
        shown = self.to_control(value)
        if self.kind in ("lines", "json", "pairs", "longtext"):
            ctl = w.Textarea(value=shown, rows=self.rows, placeholder=self.help, **common)
        elif self.kind == "bool":
            ctl = w.Checkbox(value=shown, indent=True, **common)
        elif self.kind == "choice":
            ctl = w.Dropdown(options=list(self.options), value=shown, **common)
        elif self.kind == "int":
            ctl = w.IntText(value=shown, **common)
        elif self.kind == "float":
            ctl = w.FloatText(value=shown, **common)
        else:
            ctl = w.Text(value=shown, placeholder=self.placeholder, **common)
        ctl.add_class("fnkit-field")
        ctl.add_class(field_class(self.name))
        return ctl


def setting_field(config_class: type[Config], name: str) -> Field:
    """The field of one declared configuration setting: its label, kind, default, help and choices (one declaration)."""
    s = config_class.setting(name)
    if s.choices is not None:
        kind = "choice"
    elif s.kind is bool:
        kind = "bool"
    elif s.optional:
        kind = "text"  # "none" or a number
    else:
        kind = {int: "int", float: "float"}.get(s.kind, "text")
    default = bool(s.default) if kind == "bool" else s.default
    return Field(name, s.label, kind, default, s.help, tuple(s.choices or ()), setting=s)


COMMON_FIELDS = (
    Field(
        "dialect",
        "Dialect",
        "choice",
        "provider",
        "provider: the spec's spellings (provider:queue); aws: the real platform's (aws:sqs).",
        ("provider", "aws"),
    ),
    Field("seed", "Seed", "int", 0, "Same seed, same ids and timestamps: the event stays the same run after run."),
)
