# Types of what Compass uses of http-ece 1.2.1 (RFC 8188 / RFC 8291 content encoding), which
# ships none: compass_server/push/sender.py encrypts with it, the tests decrypt with it.
from cryptography.hazmat.primitives.asymmetric import ec

class ECEException(Exception):  # noqa: N818 - the library's name
    message: str

def encrypt(
    content: bytes,
    salt: bytes | None = None,
    key: bytes | None = None,
    private_key: ec.EllipticCurvePrivateKey | None = None,
    dh: bytes | ec.EllipticCurvePublicKey | None = None,
    auth_secret: bytes | None = None,
    keyid: str | None = None,
    keylabel: str = "P-256",
    rs: int = 4096,
    version: str = "aes128gcm",
) -> bytes: ...
def decrypt(
    content: bytes,
    salt: bytes | None = None,
    key: bytes | None = None,
    private_key: ec.EllipticCurvePrivateKey | None = None,
    dh: bytes | ec.EllipticCurvePublicKey | None = None,
    auth_secret: bytes | None = None,
    keyid: str | None = None,
    keylabel: str = "P-256",
    rs: int = 4096,
    version: str = "aes128gcm",
) -> bytes: ...
