# The part of dkimpy 1.1.8 Compass uses (service/email.py: verifying replies; tests: signing).
from collections.abc import Callable

class DKIMException(Exception): ...  # noqa: N818 - the library's name

class DKIM:
    domain: bytes | None
    def __init__(self, message: bytes | None = None) -> None: ...
    def verify(self, idx: int = 0, dnsfunc: Callable[..., bytes | None] = ...) -> bool: ...

def sign(
    message: bytes,
    selector: bytes,
    domain: bytes,
    privkey: bytes,
    include_headers: list[bytes] | None = None,
) -> bytes: ...
def verify(message: bytes, dnsfunc: Callable[..., bytes | None] = ...) -> bool: ...
