"""The settings: how a run, a builder or a command is configured, and where its defaults come from.

- `config`: the configurations declared once (`Config`, `Setting`, `setting`, `with_settings`):
  frozen dataclasses whose fields say their default, what they allow, the rule that limits them
  and a one-line help; each source declares its own (`fnkit.queue.Config`, ...).
- `project`: the project's defaults (`dialect`, `isolation`, `extensions`, `ignore`), from the
  environment, pytest's ini options or `[tool.fnkit]` in pyproject.toml, and `resolve_isolation`,
  `resolve_dialect`: the one decision of what a call runs with when it does not say.
"""
