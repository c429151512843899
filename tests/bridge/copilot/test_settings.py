"""What the bridge asks of Copilot CLI's server (compass_bridge/copilot/settings.py): the
session that offers the model `ask_user`, and Copilot's own BYOK variables handed to it as
the session's provider (its server mode does not read them itself)."""

from __future__ import annotations

import pytest

from compass_bridge.copilot.settings import create_params, provider_from_env
from tests.bridge.copilot._recorded import client_requests


def test_the_session_asks_to_hear_questions_as_recorded() -> None:
    (recorded,) = client_requests("choice", "session.create")
    env = {
        "COPILOT_PROVIDER_BASE_URL": recorded["provider"]["baseUrl"],  # the run's model port
        "COPILOT_PROVIDER_API_KEY": "compass-test",
        "COPILOT_MODEL": "scripted-model",
    }
    params = create_params(
        session_id=recorded["sessionId"],
        cwd=recorded["workingDirectory"],
        env=env,
        ask_user_variant=None,
    )
    assert params == recorded
    (form,) = client_requests("form", "session.create")
    assert form["askUserVariant"] == "elicitation"


def test_without_a_base_url_copilot_uses_its_own_models() -> None:
    assert provider_from_env({"COPILOT_PROVIDER_API_KEY": "k"}) is None
    assert "provider" not in create_params(
        session_id="s", cwd="/w", env={}, ask_user_variant="legacy"
    )


def test_every_byok_variable_is_handed_over() -> None:
    env = {
        "COPILOT_PROVIDER_BASE_URL": " https://example.test/v1 ",
        "COPILOT_PROVIDER_TYPE": "azure",
        "COPILOT_PROVIDER_WIRE_API": "responses",
        "COPILOT_PROVIDER_TRANSPORT": "websockets",
        "COPILOT_PROVIDER_API_KEY": "k",
        "COPILOT_PROVIDER_API_KEY_COMMAND": "print-key",
        "COPILOT_PROVIDER_BEARER_TOKEN": "b",
        "COPILOT_PROVIDER_MODEL_ID": "gpt-5",
        "COPILOT_PROVIDER_WIRE_MODEL": "my-deploy",
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "100000",
        "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "4000",
        "COPILOT_PROVIDER_AZURE_API_VERSION": "2024-10-21",
        "COPILOT_PROVIDER_HEADERS": "X-Tenant: a\\nX-Route: b",
    }
    assert provider_from_env(env) == {
        "baseUrl": "https://example.test/v1",
        "type": "azure",
        "wireApi": "responses",
        "transport": "websockets",
        "apiKey": "k",
        "apiKeyCommand": "print-key",
        "bearerToken": "b",
        "modelId": "gpt-5",
        "wireModel": "my-deploy",
        "maxPromptTokens": 100000,
        "maxOutputTokens": 4000,
        "azure": {"apiVersion": "2024-10-21"},
        "headers": {"X-Tenant": "a", "X-Route": "b"},
    }


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        (
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS",
            "4k",
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS must be a whole number, got '4k'",
        ),
        (
            "COPILOT_PROVIDER_HEADERS",
            "no colon",
            "COPILOT_PROVIDER_HEADERS: 'no colon' is not 'Name: Value'",
        ),
    ],
)
def test_a_value_copilot_would_refuse_says_which(name: str, value: str, problem: str) -> None:
    with pytest.raises(ValueError, match="^" + problem.replace("(", r"\(") + "$"):
        provider_from_env({"COPILOT_PROVIDER_BASE_URL": "http://x", name: value})
