"""AGENT_OAUTH_AUDIENCE written as the MCP resource URL (``https://host/mcp``) is normalised
to the server base, so the 401's resource_metadata and the published resource are right."""

from __future__ import annotations

import pytest

from gateway.host.bearer import metadata_url, protected_resource_metadata
from neuro_san.core.oauth_settings import OAuthSettings

ISSUER = "https://issuer.example.com"


@pytest.mark.parametrize("audience", ["https://agents.example.com/mcp", "https://agents.example.com/mcp/",
                                      "https://agents.example.com/", "https://agents.example.com"])
def test_an_audience_naming_the_mcp_endpoint_is_the_server_base(audience: str) -> None:
    settings = OAuthSettings.from_env({"AGENT_OAUTH_ISSUER": ISSUER, "AGENT_OAUTH_AUDIENCE": audience})
    assert settings is not None
    assert settings.audience == "https://agents.example.com"
    assert metadata_url(settings, "/mcp") == "https://agents.example.com/.well-known/oauth-protected-resource/mcp"
    assert protected_resource_metadata(settings, "/mcp")["resource"] == "https://agents.example.com/mcp"
    assert "https://agents.example.com/mcp" in settings.audiences


def test_a_prefixed_base_keeps_its_prefix() -> None:
    settings = OAuthSettings.from_env({"AGENT_OAUTH_ISSUER": ISSUER,
                                       "AGENT_OAUTH_AUDIENCE": "https://example.com/agents/mcp"})
    assert settings is not None and settings.audience == "https://example.com/agents"
