"""What the bridge asks of Copilot CLI's server: its command line and the session it opens
(pure).

- The command: the agent's COMMAND as given (`copilot`, or `npx -y @github/copilot`, with any
  options of its own) and `--headless --stdio --no-auto-update`, as the SDKs start it.
- The session (`session.create`): the bridge asks to hear the agent's questions
  (`requestUserInput`: this is what offers the model Copilot's `ask_user` tool at all;
  `requestElicitation`: its form variant, and MCP servers' forms), the `ask_user` variant
  when one is asked for (`askUserVariant`: "legacy", Copilot's default, or "elicitation"),
  no permission callback (a tool that needs a person's approval is refused by Copilot, as in
  `copilot -p` without `--allow-tool`), the working directory.
- The model: a GitHub login needs nothing here (Copilot uses the signed-in account). With a
  model provider of your own (BYOK), the server does not read Copilot's `COPILOT_PROVIDER_*`
  environment variables itself (its session gets no provider, and with no login its turn
  fails: "No GitHub OAuth token or Copilot HMAC key provided"), so the bridge reads them as
  `copilot -p` does (`copilot help environment`) and passes them as the session's
  `provider`; `COPILOT_MODEL` as its `model`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from compass_core.jsonvalues import JsonObject

__all__ = [
    "ASK_USER_VARIANTS",
    "CLIENT_NAME",
    "SERVER_ARGS",
    "AskUserVariant",
    "ask_user_variant",
    "create_params",
    "provider_from_env",
]

CLIENT_NAME: Final = "compass-agent-bridge"
SERVER_ARGS: Final = ("--headless", "--stdio", "--no-auto-update")
"""What the bridge adds to the agent's command: the SDKs' server mode over stdio."""
AskUserVariant = Literal["legacy", "elicitation"]
ASK_USER_VARIANTS: Final[tuple[AskUserVariant, ...]] = ("legacy", "elicitation")


def ask_user_variant(name: str | None) -> AskUserVariant | None:
    """`--ask-user-variant`'s value as a variant (None: Copilot's default)."""
    if name == "legacy":
        return "legacy"
    if name == "elicitation":
        return "elicitation"
    return None


_STRINGS: Final = {
    "COPILOT_PROVIDER_TYPE": "type",
    "COPILOT_PROVIDER_WIRE_API": "wireApi",
    "COPILOT_PROVIDER_TRANSPORT": "transport",
    "COPILOT_PROVIDER_API_KEY": "apiKey",
    "COPILOT_PROVIDER_API_KEY_COMMAND": "apiKeyCommand",
    "COPILOT_PROVIDER_BEARER_TOKEN": "bearerToken",
    "COPILOT_PROVIDER_MODEL_ID": "modelId",
    "COPILOT_PROVIDER_WIRE_MODEL": "wireModel",
}
_NUMBERS: Final = {
    "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "maxPromptTokens",
    "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "maxOutputTokens",
}


def provider_from_env(env: Mapping[str, str]) -> JsonObject | None:
    """The session's `provider` from Copilot's BYOK variables; None without
    `COPILOT_PROVIDER_BASE_URL` (Copilot's own models, through the signed-in account).

    Raises:
        ValueError: a variable holds what Copilot would refuse (says which).
    """
    base_url = env.get("COPILOT_PROVIDER_BASE_URL", "").strip()
    if not base_url:
        return None
    provider: JsonObject = {"baseUrl": base_url}
    for name, key in _STRINGS.items():
        value = env.get(name, "").strip()
        if value:
            provider[key] = value
    for name, key in _NUMBERS.items():
        value = env.get(name, "").strip()
        if value:
            if not value.isdigit():
                raise ValueError(f"{name} must be a whole number, got {value!r}")
            provider[key] = int(value)
    version = env.get("COPILOT_PROVIDER_AZURE_API_VERSION", "").strip()
    if version:
        provider["azure"] = {"apiVersion": version}
    headers = _headers(env.get("COPILOT_PROVIDER_HEADERS", ""))
    if headers:
        provider["headers"] = headers
    return provider


def _headers(raw: str) -> dict[str, object]:
    """`Name: Value` pairs, one a line (a literal `\\n` also separates them)."""
    headers: dict[str, object] = {}
    for line in raw.replace("\\n", "\n").splitlines():
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise ValueError(
                f"COPILOT_PROVIDER_HEADERS: {line.strip()[:40]!r} is not 'Name: Value'"
            )
        headers[name.strip()] = value.strip()
    return headers


def create_params(
    *,
    session_id: str,
    cwd: str,
    env: Mapping[str, str],
    ask_user_variant: AskUserVariant | None,
) -> JsonObject:
    """`session.create`'s params (see the module docstring).

    Raises:
        ValueError: a BYOK variable holds what Copilot would refuse.
    """
    params: JsonObject = {
        "sessionId": session_id,
        "clientName": CLIENT_NAME,
        "workingDirectory": cwd,
        "requestUserInput": True,
        "requestElicitation": True,
        "requestPermission": False,
    }
    if ask_user_variant is not None:
        params["askUserVariant"] = ask_user_variant
    model = env.get("COPILOT_MODEL", "").strip()
    if model:
        params["model"] = model
    provider = provider_from_env(env)
    if provider is not None:
        params["provider"] = provider
    return params
