"""Throwaway instances of Debian's Postfix and Dovecot for the real mail tier (installed by
scripts/ensure-mail): each with its own config and queue under one temporary directory, on
high loopback ports, never the system's own mail service.

- Postfix (`postfix -c DIR start`): the site's MTA of docs/answering/email.md's example.
  Compass submits to it (COMPASS_SMTP_URL); it delivers the people's domain (`example.org`)
  into Maildirs with its `virtual` agent, and relays the reply domain to Compass's listener
  by a transport map (`texthash:`), exactly as the docs' example says.
- Dovecot (`dovecot -c FILE`): the people's mailboxes over IMAP (plain login on loopback),
  reading the Maildirs Postfix writes.

Both need root (Postfix's master, Dovecot's privilege separation): `available()` says why not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping

POSTFIX: Final = "/usr/sbin/postfix"
DOVECOT: Final = "/usr/sbin/dovecot"
MAIL_UID: Final = 65534  # nobody: owns the Maildirs (Postfix's virtual agent, Dovecot)
MAIL_GID: Final = 65534
PEOPLE_DOMAIN: Final = "example.org"
PASSWORD: Final = "imap-secret"

MASTER_CF: Final = """\
{smtp_listen} inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
local     unix  -       n       n       -       -       local
virtual   unix  -       n       n       -       -       virtual
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""

MAIN_CF: Final = """\
compatibility_level = 3.6
queue_directory = {root}/queue
data_directory = {root}/data
meta_directory = /etc/postfix
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
shlib_directory = /usr/lib/postfix
mail_owner = postfix
setgid_group = postdrop
maillog_file = {root}/postfix.log
maillog_file_prefixes = {root}
myhostname = mx.compass.test
mydomain = compass.test
myorigin = compass.test
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
smtp_host_lookup = native
disable_dns_lookups = yes
alias_maps =
alias_database =
biff = no
# The docs' example (docs/answering/email.md): relay the reply domain to Compass.
relay_domains = {reply_domain}
transport_maps = texthash:{root}/conf/compass_transport
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
# The people's mailboxes, read by Dovecot.
virtual_mailbox_domains = {people_domain}
virtual_mailbox_base = {root}/mail
virtual_mailbox_maps = texthash:{root}/conf/vmailbox
virtual_uid_maps = static:{uid}
virtual_gid_maps = static:{gid}
virtual_minimum_uid = 100
# Retry a deferred reply soon (the tests wait for it), not after Postfix's minutes.
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
"""

DOVECOT_CONF: Final = """\
base_dir = {root}/dovecot/run
state_dir = {root}/dovecot/state
log_path = {root}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
default_internal_user = dovecot
default_login_user = dovenull
first_valid_uid = 100
mail_location = maildir:{root}/mail/%d/%n
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/dovecot/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/mail/%d/%n
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
service imap-login {{
  chroot =
}}
"""


def _quiet(command: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        command,
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
    )


def available() -> str | None:
    """Why the real mail tier cannot run here, or None."""
    if not (os.path.exists(POSTFIX) and os.path.exists(DOVECOT)):  # noqa: PTH110
        return "Debian's postfix and dovecot-imapd are not installed (scripts/ensure-mail)"
    if os.geteuid() != 0:
        return "Postfix's master and Dovecot need root"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True, slots=True, kw_only=True)
class MailServers:
    root: Path
    smtp_port: int
    """Postfix's smtpd on 127.0.0.1."""
    imap_port: int
    """Dovecot's IMAP on 127.0.0.1."""
    reply_domain: str

    def log(self) -> str:
        parts = []
        for name in ("postfix.log", "dovecot.log"):
            path = self.root / name
            if path.exists():
                parts.append(f"--- {name}\n{path.read_text(errors='replace')}")
        return "\n".join(parts)


def _wait_port(port: int, what: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not listen on {port}")


@contextlib.contextmanager
def running(
    *, reply_domain: str, compass_port: int, people: Mapping[str, str] | None = None
) -> Generator[MailServers]:
    """Postfix and Dovecot, configured as the module says, until the context ends.
    `people`: local part -> mailbox (a Maildir each, in PEOPLE_DOMAIN), all with PASSWORD."""
    people = people or {"ada": "ada"}
    root = Path(tempfile.mkdtemp(prefix="compass-mail-"))
    root.chmod(0o755)  # Postfix's and Dovecot's unprivileged users reach into it
    conf = root / "conf"
    conf.mkdir()
    for sub in ("data", "queue", "mail", "dovecot", "dovecot/run", "dovecot/state"):
        (root / sub).mkdir(parents=True)
    shutil.chown(root / "data", "postfix", "postfix")
    os.chown(root / "mail", MAIL_UID, MAIL_GID)
    servers = MailServers(
        root=root, smtp_port=free_port(), imap_port=free_port(), reply_domain=reply_domain
    )
    values = {
        "root": root,
        "reply_domain": reply_domain,
        "people_domain": PEOPLE_DOMAIN,
        "uid": MAIL_UID,
        "gid": MAIL_GID,
        "imap_port": servers.imap_port,
    }
    (conf / "main.cf").write_text(MAIN_CF.format(**values))
    (conf / "master.cf").write_text(MASTER_CF.format(smtp_listen=f"127.0.0.1:{servers.smtp_port}"))
    # The transport map of the docs' example: the reply domain to Compass's listener.
    (conf / "compass_transport").write_text(f"{reply_domain}    smtp:[127.0.0.1]:{compass_port}\n")
    (conf / "vmailbox").write_text(
        "".join(
            f"{local}@{PEOPLE_DOMAIN}    {PEOPLE_DOMAIN}/{box}/\n" for local, box in people.items()
        )
    )
    (root / "dovecot.conf").write_text(DOVECOT_CONF.format(**values))
    (root / "dovecot" / "passwd").write_text(
        "".join(f"{local}@{PEOPLE_DOMAIN}:{{PLAIN}}{PASSWORD}\n" for local in people)
    )
    env = {**os.environ, "MAIL_CONFIG": str(conf)}
    started: list[list[str]] = []
    # Both daemonize, and their children keep the descriptors they were given: no pipes (a
    # pipe would never see its end). Postfix says why it did not start in its log file.
    try:
        for start, stop in (
            ([POSTFIX, "-c", str(conf), "start"], [POSTFIX, "-c", str(conf), "stop"]),
            (
                [DOVECOT, "-c", str(root / "dovecot.conf")],
                [DOVECOT, "-c", str(root / "dovecot.conf"), "stop"],
            ),
        ):
            if _quiet(start, env).returncode != 0:
                raise RuntimeError(f"{start[0]} did not start:\n{servers.log()}")
            started.append(stop)
        _wait_port(servers.smtp_port, "postfix")
        _wait_port(servers.imap_port, "dovecot")
        yield servers
    finally:
        for stop in reversed(started):
            _quiet(stop, env)
        shutil.rmtree(root, ignore_errors=True)
