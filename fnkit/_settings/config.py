"""Configurations declared once: frozen dataclasses whose fields say their default, what they allow, the rule
that limits them and a one-line help.

Each source has one: the queue and its poller (`fnkit.queue.QueueConfig`), the mail-flow rule
(`fnkit.mail.MailConfig`) and the load balancer's target group (`fnkit.alb.AlbConfig`). A
field is declared with `setting(default, help=..., rule=..., choices=... | minimum=...,
maximum=...)`; everything that takes the settings reads that one declaration:

- validation: making a config checks every field, then the rules between fields; a value
  the platform refuses raises ValueError naming the rule ("batch_size must be ... (Q1)");
- keywords: `@with_settings(QueueConfig, "report_batch_item_failures")` on a function that
  takes `config=None, **settings` generates its signature (what `help()` and `inspect`
  show) from the fields, and `QueueConfig.of(config, settings, function)` reads them;
- the command line: `QueueConfig.add_arguments(parser, names)` makes the options, and
  `QueueConfig.given(namespace)` reads back the ones given;
- the widgets: `fnkit.widgets` makes a form field from each `Setting`.

The core stays light: argparse is imported only when options are made.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeVar, cast

from .._engine.memo import Readings
from .project import project_table

_KEY = "fnkit"
_NOT_GIVEN: Any = object()

C = TypeVar("C", bound="Config")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Setting:
    """One configuration field as declared: its default, what it allows, the rule that limits it, its help."""

    name: str
    kind: type  # bool, int, float or str
    default: Any
    help: str
    rule: str | None = None
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None  # an exclusive lower bound (a timeout above 0)
    below: float | None = None  # an exclusive upper bound (a fraction below 1)
    optional: bool = False  # None is allowed (and means what `help` says)
    label: str = ""  # the widgets' label
    option: str = ""  # the command line's option

    @property
    def annotation(self) -> str:
        """The field's type as a signature shows it ("int | None")."""
        return self.kind.__name__ + (" | None" if self.optional else "")

    @property
    def flag(self) -> str:
        """The command-line option: declared, or made from the name (`batch_window_s` -> `--batch-window`)."""
        if self.option:
            return self.option
        stem = self.name.removesuffix("_s")
        stem = stem.replace("_", "-")
        return f"--no-{stem}" if self.kind is bool and self.default is True else f"--{stem}"

    def allowed(self) -> str:
        """What the field takes, in words ("a whole number from 1 to 10,000", "'sync' or 'async'")."""
        if self.choices is not None:
            shown = [repr(c) for c in self.choices]
            if len(shown) <= 2:
                return " or ".join(shown)
            return "one of " + ", ".join(shown[:-1]) + " or " + shown[-1]
        if self.kind is bool:
            return "True or False"
        what = "a whole number" if self.kind is int else "a number"
        if self.above is not None:
            what += f" above {_number(self.above)}"
        if self.minimum is not None and self.maximum is not None:
            what += f" from {_number(self.minimum)} to {_number(self.maximum)}"
        elif self.minimum is not None:
            what += f" from {_number(self.minimum)}"
        elif self.maximum is not None:
            what += f" up to {_number(self.maximum)}"
        if self.below is not None:
            what += f" below {_number(self.below)}"
        return what

    def refuse(self, value: Any, why: str = "") -> ValueError:
        """The ValueError for a value this field does not take, naming the rule."""
        tag = f" ({self.rule})" if self.rule else ""
        none = " or None" if self.optional and self.choices is None else ""
        return ValueError(f"{self.name} must be {self.allowed()}{none}, not {value!r}{why}{tag}.")

    def check(self, value: Any) -> Any:
        """The value as the field keeps it (an int for a float field becomes a float); ValueError naming the rule."""
        if value is None and self.optional:
            return None
        kind = self.kind
        if kind is bool:
            if type(value) is bool:
                return value
            if type(value).__name__ == "bool_":  # numpy's bool
                return bool(value)
            raise self.refuse(value)
        if kind is str:
            if self.choices is not None and value not in self.choices:
                raise self.refuse(value)
            if not isinstance(value, str):
                raise self.refuse(value)
            return value
        if isinstance(value, bool) or not _is_real(value):
            raise self.refuse(value)
        if kind is int:
            if not _is_whole(value):
                raise self.refuse(value)
            value = int(value)
        else:
            value = float(value)
            if math.isnan(value):
                raise self.refuse(value)
        if (
            (self.minimum is not None and value < self.minimum)
            or (self.maximum is not None and value > self.maximum)
            or (self.above is not None and not value > self.above)
            or (self.below is not None and not value < self.below)
        ):
            raise self.refuse(value)
        return value

    def parse(self, text: str) -> Any:
        """A command-line value: the text read as this field's kind, then checked."""
        if self.kind is str:
            return self.check(text)
        if self.optional and text.strip().lower() == "none":
            return None
        try:
            value: Any = int(text) if self.kind is int else float(text)
        except ValueError:
            raise self.refuse(text) from None
        return self.check(value)


def _is_real(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, (str, bytes, bytearray, complex))


def _is_whole(value: Any) -> bool:
    if isinstance(value, int):
        return True
    try:
        import operator

        operator.index(value)  # numpy's integers
        return True
    except TypeError:
        return False


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def setting(
    default: Any,
    *,
    help: str,  # noqa: A002 - argparse's word for it, which every declaration reads as
    rule: str | None = None,
    choices: Iterable[Any] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    label: str = "",
    option: str = "",
) -> Any:
    """Declare a configuration field: its default, what it allows, the rule that limits it, its one-line help.

    `label`: the widgets' label (default: the name in words); `option`: the command line's
    option when it is not made from the name.
    """
    declared = {
        "help": help,
        "rule": rule,
        "choices": tuple(choices) if choices is not None else None,
        "minimum": minimum,
        "maximum": maximum,
        "above": above,
        "below": below,
        "label": label,
        "option": option,
    }
    return field(default=default, metadata={_KEY: declared})


def _kind(annotation: Any) -> tuple[type, bool]:
    """(bool | int | float | str, whether None is allowed) of a field's annotation."""
    args = typing.get_args(annotation)
    optional = type(None) in args
    if args:
        kinds = [a for a in args if a is not type(None)]
        annotation = kinds[0]
    if typing.get_origin(annotation) is typing.Literal:
        annotation = type(typing.get_args(annotation)[0])
    if annotation not in (bool, int, float, str):
        raise TypeError(f"a setting is a bool, int, float or str (optionally | None), not {annotation!r}")
    return annotation, optional


_MADE: dict[type, Readings[Any, Any]] = {}  # per class: (config, settings given) -> the configuration made


class Config:
    """The base of the sources' configurations (frozen dataclasses): validation, keywords, options, rows.

    A subclass declares its fields with `setting(...)`, sets `source`, and may refine
    `_check_together` for the rules between fields.
    """

    source: ClassVar[str] = ""
    title: ClassVar[str] = ""  # what the configuration configures ("the queue and its poller")
    #: other names a keyword may use for a setting (alias -> setting), as `timeout_s` for the queue's function timeout
    aliases: ClassVar[dict[str, str]] = {}
    #: settings whose default a project may set in [tool.fnkit] (as the mail flow's `extensions`)
    project: ClassVar[tuple[str, ...]] = ()
    _settings: ClassVar[dict[str, Setting]]
    _default: ClassVar[Any]

    # -- the declaration -------------------------------------------------------------------

    @classmethod
    def settings(cls, names: Iterable[str] | None = None) -> list[Setting]:
        """The declared fields, in order (only `names`, in that order, when given)."""
        declared = cls.__dict__.get("_settings")
        if declared is None:
            hints = typing.get_type_hints(cls)
            declared = {}
            for f in dataclasses.fields(cls):  # type: ignore[arg-type]
                meta = f.metadata.get(_KEY)
                if meta is None:
                    continue
                kind, optional = _kind(hints[f.name])
                label = meta["label"] or f.name.replace("_", " ").capitalize()
                declared[f.name] = Setting(f.name, kind, f.default, optional=optional, **{**meta, "label": label})
            cls._settings = declared
        if names is None:
            return list(declared.values())
        unknown = [n for n in names if n not in declared]
        if unknown:
            raise KeyError(f"{cls.__name__} has no setting {', '.join(unknown)}")
        return [declared[n] for n in names]

    @classmethod
    def setting(cls, name: str) -> Setting:
        """One declared field, by name."""
        return cls.settings([name])[0]

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The names of the declared fields."""
        return tuple(s.name for s in cls.settings())

    # -- validation -------------------------------------------------------------------------

    def __post_init__(self) -> None:
        for s in type(self).settings():
            value = getattr(self, s.name)
            kept = s.check(value)
            if kept is not value:
                object.__setattr__(self, s.name, kept)
        self._check_together()

    def _check_together(self) -> None:
        """The rules between fields (a subclass refines this); ValueError naming the rule."""

    # -- reading settings from keywords -------------------------------------------------------

    @classmethod
    def of(
        cls, config: typing.Self | None = None, settings: Mapping[str, Any] | None = None, taker: Any = None
    ) -> typing.Self:
        """The configuration a call asks for: `config` (default: every default) with `settings` (keywords) on top.

        `taker`: the function (or class) whose keywords `settings` are, declared with
        `with_settings`; a keyword it does not take is a TypeError naming it. Without `config`,
        a setting of `project` not given takes [tool.fnkit]'s value when the project sets one.
        """
        if cls.project and config is None:
            settings = cls._project_defaults(settings or {}, taker)
        if not settings:
            if config is None:
                default = cls.__dict__.get("_default")
                if default is None:
                    default = cls()
                    cls._default = default
                return default
            if type(config) is not cls:
                raise TypeError(f"config must be a {cls.__name__}, not {type(config).__name__}")
            return config
        allowed = getattr(taker, "__fnkit_settings__", None) or cls.names()
        settings = cls._unaliased(settings, allowed)
        unknown = [k for k in settings if k not in allowed]
        if unknown:
            who = getattr(taker, "__qualname__", cls.__name__)
            raise TypeError(f"{who}() got an unexpected keyword argument {unknown[0]!r}")
        if config is not None and type(config) is not cls:
            raise TypeError(f"config must be a {cls.__name__}, not {type(config).__name__}")
        try:  # a call that asks again for a configuration made before gets it at once (the validators' keywords)
            key: Any = (config, tuple([(k, type(v), v) for k, v in settings.items()]))
            made = cast("Self | None", _MADE.get(cls, {}).get(key))  # the memo holds this class's instances
        except TypeError:  # a value that cannot be hashed: made afresh, and refused by its check
            key = made = None
        if made is not None:
            return made
        values = config.keywords() if config is not None else {}
        values.update(settings)
        made = cls(**values)
        if key is not None:
            memo = _MADE.get(cls)
            if memo is None:
                memo = _MADE[cls] = Readings()
            memo.remember(key, made)
        return made

    @classmethod
    def _project_defaults(cls, settings: Mapping[str, Any], taker: Any) -> Mapping[str, Any]:
        """`settings` with the project's value of each `project` setting the call does not give and the taker takes."""
        found = project_table()  # a few stat calls, remembered: every validation of the class asks
        if found is None:
            return settings
        table = found[1]
        extra = {name: table[name] for name in cls.project if name in table and name not in settings}
        if not extra:
            return settings
        allowed = getattr(taker, "__fnkit_settings__", None) or cls.names()
        extra = {name: value for name, value in extra.items() if name in allowed}
        return {**extra, **settings} if extra else settings

    @classmethod
    def _unaliased(cls, settings: Mapping[str, Any], allowed: Iterable[str] | None = None) -> dict[str, Any]:
        """`settings` with each alias (`aliases`) replaced by its setting's name; TypeError when both are given."""
        names = set(cls.names() if allowed is None else allowed)
        out: dict[str, Any] = {}
        for key, value in settings.items():
            name = cls.aliases.get(key, key)
            if name != key and name not in names:
                name = key  # the taker does not take the setting: refused below under the name given
            if name in out or (name != key and name in settings):
                raise TypeError(f"{key} and {name} are one setting ({cls.__name__}): give one of them")
            out[name] = value
        return out

    def keywords(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        """The settings as keywords (only `names` when given)."""
        return {s.name: getattr(self, s.name) for s in type(self).settings(names)}

    def replace(self, **changes: Any) -> typing.Self:
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    # -- shown ---------------------------------------------------------------------------------

    def rows(self) -> list[dict[str, Any]]:
        """One row per setting: its value, default, what it allows, the rule and the help (for `fnkit.tabulate`)."""
        return [
            {
                "source": self.source,
                "setting": s.name,
                "value": getattr(self, s.name),
                "default": s.default,
                "allowed": s.allowed() + (" or None" if s.optional and s.choices is None else ""),
                "rule": s.rule,
                "help": s.help,
            }
            for s in type(self).settings()
        ]

    def _repr_html_(self) -> str:
        from .._cells import panel_html

        changed = [s.name for s in type(self).settings() if getattr(self, s.name) != s.default]
        head = f"{type(self).__name__}: " + (f"{len(changed)} setting(s) changed" if changed else "every default")
        return panel_html(head, rows=self.rows(), columns=["setting", "value", "default", "allowed", "rule", "help"])

    # -- the command line -------------------------------------------------------------------

    @classmethod
    def add_arguments(cls, parser: Any, names: Iterable[str] | None = None, *, prefix: str = "") -> Any:
        """Add an option per setting (`names`, default all) to an argparse parser; returns the parser.

        An option not given leaves its setting out of the parsed namespace (`given` reads
        what was given), so the declared default applies. A value out of range is refused
        by argparse with the rule named.
        """
        import argparse

        for s in cls.settings(names):
            help_text = s.help[:1].lower() + s.help[1:] if prefix else s.help
            rule = f" [{s.rule}]" if s.rule else ""
            text = f"{prefix}{help_text}{rule} (default: {_shown_default(s)})".replace("%", "%%")
            if s.kind is bool:
                action = "store_false" if s.default is True else "store_true"
                parser.add_argument(s.flag, dest=s.name, action=action, default=argparse.SUPPRESS, help=text)
                continue
            parser.add_argument(
                s.flag, dest=s.name, type=_ArgumentType(s), default=argparse.SUPPRESS, metavar=_metavar(s), help=text
            )
        return parser

    @classmethod
    def given(cls, namespace: Any, names: Iterable[str] | None = None) -> dict[str, Any]:
        """The settings given on the command line (an argparse namespace), as keywords."""
        return {s.name: getattr(namespace, s.name) for s in cls.settings(names) if hasattr(namespace, s.name)}


def _shown_default(s: Setting) -> str:
    if s.kind is bool:
        return {True: "on", False: "off"}.get(s.default, "not set")
    if s.default is None:
        return "none"
    return _number(s.default) if s.kind in (int, float) else str(s.default)


def _metavar(s: Setting) -> str:
    if s.choices is not None:
        return "{" + ",".join(map(str, s.choices)) + "}"
    if s.name.endswith("_s"):
        return "S"
    if s.name.endswith("_minutes"):
        return "MIN"
    return "N" if s.kind is int else "X"


class _ArgumentType:
    """argparse's `type=` for one setting: the text read and checked, a refusal worded with its rule."""

    def __init__(self, setting: Setting) -> None:
        self.setting = setting
        self.__name__ = setting.kind.__name__  # argparse names the type in some messages

    def __call__(self, text: str) -> Any:
        import argparse

        try:
            return self.setting.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


def with_settings(config_class: type[Config], *names: str) -> Callable[[F], F]:
    """Declare that a function (or `__init__`) takes these settings of `config_class` as keywords, and `config=`.

    The function is written `def f(..., config=None, **settings)` and reads them with
    `config_class.of(config, settings, f)`; this generates its signature (what `help()`,
    Jupyter and `inspect` show): one keyword per setting, with the declared default.
    `names`: the settings it takes (default: all).
    """
    chosen = config_class.settings(names or None)

    def declare(fn: F) -> F:
        signature = inspect.signature(fn)
        params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        at = next((i for i, p in enumerate(params) if p.name == "config"), len(params))
        keywords = [
            inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, default=s.default, annotation=s.annotation)
            for s in chosen
        ]
        fn.__signature__ = signature.replace(parameters=params[:at] + keywords + params[at:])  # type: ignore[attr-defined]
        fn.__fnkit_settings__ = tuple(s.name for s in chosen)  # type: ignore[attr-defined]
        fn.__fnkit_config__ = config_class  # type: ignore[attr-defined]
        return fn

    return declare


def settings_of(taker: Any) -> tuple[type[Config] | None, tuple[str, ...]]:
    """(the config class, the setting names) a function declared with `with_settings` takes; (None, ()) otherwise."""
    return getattr(taker, "__fnkit_config__", None), getattr(taker, "__fnkit_settings__", ())


def accepted(fn: Callable[..., Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The `options` that `fn` takes as keywords (all of them when it takes **kwargs), by its signature."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return dict(options)
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return {k: v for k, v in options.items() if k in names}


__all__ = ["Config", "Setting", "accepted", "setting", "settings_of", "with_settings"]
