"""Web Push rules (docs/answering/push.md): what a subscription may be, and what a push says.

`check_subscription` is every check of AddPushSubscription that needs no stored state: the
endpoint (domain/webhook_targets.check_url, https only unless its host is allowed), the
subscriber's keys and the device's name. `ask_payload` and `closed_payload` are the JSON a
device's service worker receives (encrypted to the device: the push service sees
ciphertext), at most MAX_PAYLOAD_BYTES, their texts cut to fit. Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from cryptography.hazmat.primitives.asymmetric import ec

from compass_server.domain import ask_text
from compass_server.domain.errors import FieldViolation, InvalidArgumentError
from compass_server.domain.limits import nul, too_long
from compass_server.domain.vapid import b64url, b64url_decode
from compass_server.domain.webhook_targets import check_url
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_server.domain.webhook_targets import AllowList

MAX_SUBSCRIPTIONS: Final = 20
"""Push subscriptions one account may hold (AddPushSubscription's RESOURCE_EXHAUSTED)."""
MAX_DEVICE_NAME: Final = 200
"""Characters of a device's name."""
MAX_PAYLOAD_BYTES: Final = 3800
"""A push's plaintext JSON, at most: under the 4096 bytes every push service takes once the
aes128gcm header (86 bytes) and record padding are added."""
MAX_ACTIONS: Final = 2
"""Notification buttons: Chromium shows two (`Notification.maxActions`)."""
MAX_ACTION_TITLE_BYTES: Final = 120
"""A button's title, at most (a phone shows a few words of it)."""
PUSH_SETTING: Final = "COMPASS_PUSH_ALLOW_HOSTS"


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSubscription:
    """A checked AddPushSubscription, normalized as stored."""

    endpoint: str
    p256dh: str
    """base64url without padding."""
    auth: str
    """base64url without padding."""
    device_name: str


def check_subscription(
    request: comms_pb2.AddPushSubscriptionRequest, allow: AllowList
) -> NewSubscription:
    """AddPushSubscription's request, checked; `allow` is COMPASS_PUSH_ALLOW_HOSTS.

    Raises:
        InvalidArgumentError: naming every field that is wrong (`endpoint`, `p256dh`, `auth`,
            `device_name`).
    """
    violations: list[FieldViolation] = []
    endpoint = ""
    try:
        endpoint = check_url(request.endpoint, allow, https_only=True)
    except InvalidArgumentError as exc:
        violations.append(FieldViolation(field="endpoint", description=exc.message))
    p256dh = _key("p256dh", request.p256dh, _is_p256_point, violations)
    auth = _key("auth", request.auth, lambda raw: len(raw) == 16, violations)
    name = request.device_name
    violations += nul("device_name", name)
    if len(name) > MAX_DEVICE_NAME:
        violations.append(too_long("device_name", "device_name", MAX_DEVICE_NAME))
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        violations.append(FieldViolation(field="device_name", description="not valid Unicode"))
    if violations:
        fields = ", ".join(dict.fromkeys(v.field for v in violations))
        raise InvalidArgumentError(f"invalid {fields}: {violations[0].description}", violations)
    return NewSubscription(endpoint=endpoint, p256dh=p256dh, auth=auth, device_name=name)


def _key(
    field: str, text: str, valid: Callable[[bytes], bool], violations: list[FieldViolation]
) -> str:
    what = {
        "p256dh": "a P-256 public key: 65 bytes, uncompressed, base64url",
        "auth": "16 bytes, base64url",
    }[field]
    try:
        raw = b64url_decode(text)
    except ValueError:
        raw = b""
    if not text or not valid(raw):
        violations.append(FieldViolation(field=field, description=f"{field} must be {what}"))
        return ""
    return b64url(raw)


def _is_p256_point(raw: bytes) -> bool:
    if len(raw) != 65 or raw[0] != 0x04:
        return False
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
    except ValueError:  # not on the curve
        return False
    return True


# -- what a push says ------------------------------------------------------------------------


def ask_payload(
    ask: comms_pb2.Ask,
    *,
    asker: str,
    channel: str,
    public_url: str,
    answer_token: str,
) -> bytes:
    """The push of a pending ask (also its reminders): who asks where, the first question,
    the buttons when one tap can answer it, the link to open it, and where to send a tap's
    answer with its one-time token. At most MAX_PAYLOAD_BYTES: texts are cut to fit."""
    taps = ask_text.one_tap(ask, most=MAX_ACTIONS)
    body = ask_text.summary(ask)
    if taps:
        hidden = len(ask.questions[0].options) - len(taps)
        if hidden > 0:
            body += f"\n+{hidden} more {'option' if hidden == 1 else 'options'} in Compass"
    actions = [(c.option_id, ask_text.clip_bytes(c.label, MAX_ACTION_TITLE_BYTES)) for c in taps]
    texts = {"title": ask_text.headline(asker, channel), "body": body}
    fixed: dict[str, object] = {
        "type": "ask",
        "ask_id": ask.ask_id,
        "tag": ask.ask_id,
        "url": f"{public_url}#/ask/{ask.ask_id}",
        "answer_url": f"{public_url}push/answer",
        "answer_token": answer_token,
    }
    return _fitted(fixed, texts, actions)


def closed_payload(ask: comms_pb2.Ask) -> bytes:
    """The push that replaces an ask's notice once it ended (answered anywhere, declined,
    withdrawn, timed out, expired): its status and who ended it ("" when nobody did: it
    expired)."""
    if ask.status == comms_pb2.ASK_STATUS_ANSWERED:
        by = ask.answered_by_name
    elif ask.status == comms_pb2.ASK_STATUS_EXPIRED:
        by = ""
    else:
        by = ask.closed_by_name
    fixed: dict[str, object] = {
        "type": "ask_closed",
        "ask_id": ask.ask_id,
        "tag": ask.ask_id,
        "status": comms_pb2.AskStatus.Name(ask.status),
    }
    return _fitted(fixed, {"by": by}, None)


def _fitted(
    fixed: dict[str, object], texts: dict[str, str], actions: list[tuple[str, str]] | None
) -> bytes:
    """The JSON of `fixed`, `texts` and `actions` (None: no "actions" key) in at most
    MAX_PAYLOAD_BYTES: while too long, the longest of `texts` is cut by what is over.
    Cutting n bytes of UTF-8 shortens the JSON by n at least (an escape is longer than its
    character), so a cut fits unless the text is too short; then it is emptied and the next
    one cut. When every text is empty the buttons go (a tap then opens the form)."""

    def encoded() -> bytes:
        payload = {**fixed, **texts}
        if actions is not None:
            payload["actions"] = [{"action": a, "title": t} for a, t in actions]
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    data = encoded()
    while len(data) > MAX_PAYLOAD_BYTES:
        over = len(data) - MAX_PAYLOAD_BYTES
        longest = max(texts, key=lambda key: len(texts[key].encode("utf-8")))
        size = len(texts[longest].encode("utf-8"))
        if size:
            room = max(0, size - over - len(ask_text.ELLIPSIS.encode("utf-8")))
            texts[longest] = ask_text.clip_bytes(texts[longest], room)
        elif actions:
            actions = []
        else:
            raise ValueError("a push's fixed fields alone are over its size limit")
        data = encoded()
    return data
