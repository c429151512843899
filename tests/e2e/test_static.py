"""The UI's static files: served at /, with headers a page of agent text needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx


async def test_index_and_assets_carry_security_and_cache_headers(http: httpx.AsyncClient) -> None:
    index = await http.get("/")
    assert index.status_code == 200
    assert index.headers["content-type"].startswith("text/html")
    assert "<title>Compass</title>" in index.text
    script = await http.get("/app.js")
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    for response in (index, script):
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
        policy = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy


async def test_rpc_responses_are_not_dressed_as_pages(http: httpx.AsyncClient) -> None:
    response = await http.post("/compass.v1.CommsService/ListChannels", json={})
    assert response.status_code == 401
    assert "content-security-policy" not in response.headers
