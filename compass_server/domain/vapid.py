"""VAPID (RFC 8292): the application server's P-256 key, and the JWT that signs each push.

Push services accept a push only with `Authorization: vapid t=<JWT>, k=<public key>`: an
ES256 JWT whose `aud` is the origin of the push endpoint, `exp` at most 24 hours ahead and
`sub` a contact (mailto: or https:), signed by the key whose public half the browser was
given at `PushManager.subscribe({applicationServerKey})`. So every worker and replica must
sign with one key: COMPASS_VAPID_PRIVATE_KEY, else one generated once and kept in the
database (`store.PushStore.vapid_private_key`).

The private key's text form is what `web-push generate-vapid-keys` and py-vapid print: the
32-byte private scalar, base64url without padding; a PEM key (PKCS#8 or SEC 1) is read too.
Pure computation, no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

JWT_LIFETIME_SECONDS: Final = 12 * 3600
"""`exp` of each JWT: well inside the 24 hours RFC 8292 allows, so clock skew cannot push a
token past it."""
_JWT_HEADER: Final = {"typ": "JWT", "alg": "ES256"}


def b64url(data: bytes) -> str:
    """base64url without padding (RFC 7515 §2), as Web Push spells keys and tokens."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """The bytes of base64url text, with or without padding.

    Raises:
        ValueError: not base64url.
    """
    if not text.isascii() or any(c in text for c in "+/ \n\r\t"):
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


def public_point(key: ec.EllipticCurvePublicKey) -> bytes:
    """The 65-byte uncompressed point of a P-256 public key."""
    return key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )


def generate_private_key() -> str:
    """A new VAPID private key, in its text form (base64url of the 32-byte scalar)."""
    key = ec.generate_private_key(ec.SECP256R1())
    return b64url(key.private_numbers().private_value.to_bytes(32, "big"))


def origin(url: str) -> str:
    """`scheme://host[:port]` of an endpoint URL (its JWT audience): the port only when it is
    not the scheme's default."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"https": 443, "http": 80}.get(scheme)
    port = parts.port
    return f"{scheme}://{host}" if port in {None, default} else f"{scheme}://{host}:{port}"


@dataclass(frozen=True, slots=True)
class VapidKey:
    """The application server's key pair."""

    private: ec.EllipticCurvePrivateKey

    @classmethod
    def parse(cls, text: str) -> VapidKey:
        """A private key from its text form (base64url scalar, or PEM).

        Raises:
            ValueError: neither, or not a P-256 key; the message never quotes the key.
        """
        text = text.strip()
        if text.startswith("-----BEGIN"):
            try:
                key = serialization.load_pem_private_key(text.encode(), password=None)
            except (ValueError, TypeError):
                raise ValueError("not a PEM private key") from None
            if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(
                key.curve, ec.SECP256R1
            ):
                raise ValueError("not a P-256 (prime256v1) key")
            return cls(key)
        try:
            raw = b64url_decode(text)
        except ValueError:
            raise ValueError("not base64url (nor PEM)") from None
        if len(raw) != 32:
            raise ValueError("a raw private key is 32 bytes (base64url, 43 characters)")
        try:
            return cls(ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1()))
        except ValueError:
            raise ValueError("not a valid P-256 private key") from None

    @property
    def public_key(self) -> str:
        """The applicationServerKey: base64url of the 65-byte uncompressed public point."""
        return b64url(public_point(self.private.public_key()))

    def token(self, audience: str, subject: str, now: float) -> str:
        """An ES256 JWT for `audience` (an origin), expiring JWT_LIFETIME_SECONDS after `now`
        (Unix seconds). Claims are sorted and compact: some push services compare bytes."""
        claims = {"aud": audience, "exp": int(now) + JWT_LIFETIME_SECONDS, "sub": subject}
        signing_input = ".".join(
            b64url(json.dumps(part, separators=(",", ":"), sort_keys=True).encode())
            for part in (_JWT_HEADER, claims)
        )
        der = self.private.sign(signing_input.encode("ascii"), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)  # JWS wants r || s, 32 bytes each (RFC 7518 §3.4)
        return f"{signing_input}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def authorization(self, endpoint: str, subject: str, now: float) -> str:
        """The `Authorization` header of a push to `endpoint` (RFC 8292 §3)."""
        return f"vapid t={self.token(origin(endpoint), subject, now)}, k={self.public_key}"


def check_subject(subject: str) -> str:
    """A VAPID `sub`: a mailto: or https: URI.

    Raises:
        ValueError: anything else.
    """
    lowered = subject.lower()
    if not (
        (lowered.startswith("mailto:") and "@" in subject and len(subject) > len("mailto:"))
        or (lowered.startswith("https://") and len(subject) > len("https://"))
    ) or any(c.isspace() for c in subject):
        raise ValueError(f"must be a mailto: or https: URI, got {subject!r}")
    return subject


def default_subject(public_url: str) -> str:
    """The `sub` when COMPASS_VAPID_SUBJECT is unset: the origin of the public URL (people can
    reach whoever runs it there). Push services may refuse an http: one (Apple's does): set
    COMPASS_VAPID_SUBJECT or an https COMPASS_PUBLIC_URL (docs/answering/push.md)."""
    return origin(public_url)
