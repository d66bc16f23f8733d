"""Credentials never reach a file, a log or a message the tool writes.

A storage URL may carry a password in its user part (`postgresql://user:SECRET@host/db`), its query
(`?password=`, `&sslpassword=`) or a file it names (`?passfile=`); one may also come from the
environment (PGPASSWORD, or `--storage-password-env`'s variable). Wherever a command or option is
recorded (run.json, reports, comment.md, PR.md, messages), `redact` shows each as `***`, and an
environment password is hidden wherever it appears; the URL stored for a resume has none
(`without_password`), the password coming from the environment as PostgreSQL's tools take it.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import quote, unquote

# scheme://user:password@: the user has no ':' or '/'; the password runs to the last '@'
# before the host (an '@' in it should be written %40, but may not be).
_USERINFO = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*)"
    r":(?P<password>(?:[^@\s]|@(?=[^\s/]*@))*)@"
)
# A query parameter that is, or points to, a secret: password, sslpassword, passfile, and any key
# naming a secret or token.
_QUERY = re.compile(
    r"(?P<head>[?&;](?P<key>[A-Za-z_]*(?:pass(?:word|wd|file)?|secret|token)[A-Za-z_]*)=)"
    r"(?P<value>[^&;#\s'\"]*)",
    re.IGNORECASE,
)
# Environment variables whose value is a password wherever it appears.
_SECRET_VARIABLES = ("PGPASSWORD", "POOL_TUNING_STORAGE_PASSWORD")
# Shorter values would hide ordinary words.
_SHORTEST_SECRET = 4
HIDDEN = "***"

# Secrets of this process (typed in a URL, or read from a variable): hidden wherever they appear.
_known: set[str] = set()


def remember_secret(value: str | None) -> None:
    """Hide `value` wherever `redact` meets it from now on (a password this process uses)."""
    if value and len(value) >= _SHORTEST_SECRET:
        _known.update({value, quote(value, safe=""), unquote(value)})


def redact(text: str) -> str:
    """`text` with every URL password in it and every password this process knows of shown as
    ***."""
    text = _USERINFO.sub(lambda m: f"{m['head']}:{HIDDEN}@", text)
    text = _QUERY.sub(lambda m: f"{m['head']}{HIDDEN}", text)
    for secret in sorted(_secrets(), key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


def redact_data(data: Any) -> Any:
    """JSON-like `data` with every text in it `redact`ed (a record written to a file)."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {key: redact_data(value) for key, value in data.items()}
    if isinstance(data, list):
        return [redact_data(value) for value in data]
    return data


def _secrets() -> set[str]:
    from_environment = (os.environ.get(name) for name in _SECRET_VARIABLES)
    return _known | {v for v in from_environment if v and len(v) >= _SHORTEST_SECRET}


def without_password(url: str) -> str:
    """The URL with no password at all: what is stored, and what libpq completes from PGPASSWORD
    or ~/.pgpass."""
    bare = _USERINFO.sub(lambda m: f"{m['head']}@", url)
    bare = _QUERY.sub("", bare)
    if "?" not in bare and ("&" in bare or ";" in bare):  # the first parameter went
        bare = re.sub(r"[&;]", "?", bare, count=1)
    return bare


def query_password(url: str) -> str | None:
    """The password given as `?password=` in `url`, if any."""
    for match in _QUERY.finditer(url):
        if match["key"].lower() == "password":
            return unquote(match["value"])
    return None


def has_password(url: str) -> bool:
    return _USERINFO.search(url) is not None or _QUERY.search(url) is not None


def with_password(url: str, password: str) -> str:
    """`url` with `password` put in (percent-encoded), replacing its own; a URL without a user
    part takes it as `?password=`."""
    match = re.match(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]*)(:[^@\s]*)?@", url)
    if match is None:
        if "://" not in url:
            raise ValueError("the storage URL is not of the form scheme://host/... ")
        bare = without_password(url)
        joint = "&" if "?" in bare else "?"
        return f"{bare}{joint}password={quote(password, safe='')}"
    return f"{match['scheme']}{match['user']}:{quote(password, safe='')}@{url[match.end() :]}"
