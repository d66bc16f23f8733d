"""Credentials never reach a file, a log or a message the tool writes.

A storage URL may carry a password (`postgresql://user:SECRET@host/db`). Wherever a command or
an option is recorded (run.json, report.json, report.md's Command line, messages), the password
is shown as `***`; the URL stored for a resume has none, and the password comes from the
environment when needed, as PostgreSQL's own tools take it (PGPASSWORD, ~/.pgpass, or the
variable `--storage-password-env` names).
"""

from __future__ import annotations

import re
from urllib.parse import quote

# scheme://user:password@: the user has no ':' or '/'; the password runs to the last '@'
# before the host (an '@' in it should be written %40, but may not be).
_USERINFO = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*)"
    r":(?P<password>(?:[^@\s]|@(?=[^\s/]*@))*)@"
)
HIDDEN = "***"


def redact(text: str) -> str:
    """`text` with the password of every URL in it shown as ***."""
    return _USERINFO.sub(lambda m: f"{m['head']}:{HIDDEN}@", text)


def without_password(url: str) -> str:
    """The URL with no password at all: what is stored, and what libpq completes from
    PGPASSWORD or ~/.pgpass."""
    return _USERINFO.sub(lambda m: f"{m['head']}@", url)


def has_password(url: str) -> bool:
    return _USERINFO.search(url) is not None


def with_password(url: str, password: str) -> str:
    """`url` with `password` put in (percent-encoded); the URL's own password is replaced."""
    match = re.match(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]*)(:[^@\s]*)?@", url)
    if match is None:
        raise ValueError(
            "the storage URL names no user (scheme://USER@host/...) to give the password to"
        )
    return f"{match['scheme']}{match['user']}:{quote(password, safe='')}@{url[match.end() :]}"
