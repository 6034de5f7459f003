"""The host's signed cards, checked by an independent verifier: the Python A2A SDK's own
`a2a.utils.signing` (its RFC 8785 canonicalisation over the protobuf card, PyJWT and
`cryptography` for the JWS), with the key from the card's `jku`. A card changed after
signing must not verify."""

import base64
import json

import httpx
import pytest
from a2a.types import AgentCard
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier
from google.protobuf.json_format import ParseDict
from jwt import PyJWK


def _header(card: dict) -> dict:
    protected = card["signatures"][0]["protected"]
    return json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))


def _verifier(jku: str):
    keys = httpx.get(jku).json()["keys"]

    def key_provider(kid, url):
        assert url == jku, "the verifier is handed the card's own jku"
        return PyJWK(next(k for k in keys if k["kid"] == kid))

    return create_signature_verifier(key_provider, ["EdDSA"])


def _proto(card: dict) -> AgentCard:
    return ParseDict(card, AgentCard())


def test_signed_cards_the_public_card_verifies_with_the_sdk_verifier(base_url):
    card = httpx.get(f"{base_url}/.well-known/agent-card.json").json()
    header = _header(card)
    assert header["alg"] == "EdDSA" and header["typ"] == "JOSE"
    assert header["jku"].endswith("/.well-known/jwks.json")
    verify = _verifier(header["jku"])
    verify(_proto(card))
    tampered = dict(card, description="changed after signing")
    with pytest.raises(InvalidSignaturesError):
        verify(_proto(tampered))


def test_signed_cards_an_agents_card_verifies_with_the_sdk_verifier(base_url, api_key):
    auth = {"Authorization": f"Bearer {api_key}", "A2A-Version": "1.0"}
    agents = httpx.get(f"{base_url}/agents", headers=auth).json()["agents"]
    tenant = agents[0]["a2aTenant"]
    card = httpx.get(f"{base_url}/a2a/rest/{tenant}/extendedAgentCard", headers=auth).json()
    assert card["supportedInterfaces"][0]["tenant"] == tenant
    verify = _verifier(_header(card)["jku"])
    verify(_proto(card))
    card["skills"] = card["skills"][:0]
    with pytest.raises(InvalidSignaturesError):
        verify(_proto(card))
