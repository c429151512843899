"""`--mode ID` and `--config-option ID=VALUE` of `compass agent-bridge --protocol acp`.

An ACP agent advertises, in its `session/new` response, the session modes it has
(`modes.availableModes`, set with `session/set_mode`) and its configuration options
(`configOptions`: selects with their values, booleans; set with `session/set_config_option`).
People need them to make an agent ask at all: Claude Code starts in `auto`, where a
classifier decides permissions and nothing reaches Compass (`--mode default`, its "Manual");
Codex is asked read-only or in plan mode (`--mode read-only`,
`--config-option collaboration_mode=plan`). The bridge checks each request against what
the agent advertised before it sends it (`problem`), so a typo ends the run at once with the
choices the agent offers, instead of a turn run in a mode nobody chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from acp.schema import SessionConfigOptionBoolean, SessionConfigSelectGroup

if TYPE_CHECKING:
    from collections.abc import Sequence

    from acp.schema import NewSessionResponse

__all__ = ["SessionSettings", "parse_config_option"]

_BOOLEANS = {"true": True, "false": False}


def parse_config_option(text: str) -> tuple[str, str]:
    """`ID=VALUE` as (id, value).

    Raises:
        ValueError: no `=`, or an empty id (says which).
    """
    config_id, separator, value = text.partition("=")
    if not separator or not config_id.strip():
        raise ValueError(f"--config-option must be ID=VALUE, got {text!r}")
    return config_id.strip(), value


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """The mode and configuration options to set on the session before the prompt."""

    mode: str | None = None
    config_options: tuple[tuple[str, str], ...] = ()

    def problem(self, session: NewSessionResponse) -> str | None:
        """Why the agent cannot take these settings (naming what it offers), or None."""
        if self.mode is not None:
            offered = [m.id for m in session.modes.available_modes] if session.modes else []
            if self.mode not in offered:
                return f"the agent offers no mode {self.mode!r} ({_offers(offered)})"
        options = {option.id: option for option in session.config_options or ()}
        for config_id, value in self.config_options:
            option = options.get(config_id)
            if option is None:
                return (
                    f"the agent offers no configuration option {config_id!r} "
                    f"({_offers(list(options))})"
                )
            if isinstance(option, SessionConfigOptionBoolean):
                if value not in _BOOLEANS:
                    return f"configuration option {config_id!r} is true or false, not {value!r}"
                continue
            values = _select_values(option.options)
            if value not in values:
                return (
                    f"configuration option {config_id!r} has no value {value!r} ({_offers(values)})"
                )
        return None

    def requests(self, session: NewSessionResponse) -> list[tuple[str, str | bool]]:
        """The config options as `session/set_config_option` values (a boolean option's
        "true"/"false" as a bool)."""
        booleans = {
            option.id
            for option in session.config_options or ()
            if isinstance(option, SessionConfigOptionBoolean)
        }
        return [
            (config_id, _BOOLEANS[value] if config_id in booleans else value)
            for config_id, value in self.config_options
        ]


def _select_values(options: Sequence[object]) -> list[str]:
    values: list[str] = []
    for entry in options:
        if isinstance(entry, SessionConfigSelectGroup):
            values += [option.value for option in entry.options]
        else:
            value = getattr(entry, "value", None)
            if isinstance(value, str):
                values.append(value)
    return values


def _offers(ids: Sequence[str]) -> str:
    return "it offers: " + ", ".join(ids) if ids else "it offers none"
