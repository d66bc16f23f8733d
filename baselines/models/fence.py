"""The user's own code (a FILE.py:FUNCTION spec's import and call) run fenced, so that whatever it
does ends in one line.

Inside the fence the file's folder leads the import path, its printing goes to a bounded buffer, and
`os._exit` raises. An exception (its traceback keeping the user's frames, not tune's), a
`SystemExit` or an `os._exit` becomes a `UserCodeError`; a KeyboardInterrupt a `UserCodeInterrupt`,
which stops the command in one line naming the file, exit status 2. The working directory, import
path and `os._exit` are put back on the way out. The traceback and the output's end are the error's
`details` (details.log, and the console with --verbose).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from .model_errors import ModelError, first_line

# What is kept of the user's printing (its end: what it said last before failing).
KEPT_OUTPUT = 4000
_ROOT = Path(__file__).resolve().parents[2]
# tune's own packages: their frames are left out of a user's traceback.
_TUNES = tuple(f"{_ROOT / package}{os.sep}" for package in ("baselines", "tuning", "reports"))


class UserCodeError(ModelError):
    """The user's code raised or tried to exit; `details` holds its traceback and output."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(f"{message} (--verbose shows its traceback)" if details else message)
        self.details = details


class UserCodeInterrupt(KeyboardInterrupt):
    """Ctrl-C, or a KeyboardInterrupt from the user's code, while it ran: the command stops (not
    one model's failure) with `message`, one line naming the file, exit status 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Exited(BaseException):
    """`os._exit` called inside the fence."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Tail(io.TextIOBase):
    """A stream that keeps the last KEPT_OUTPUT characters written to it."""

    def __init__(self) -> None:
        self.text = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text = (self.text + text)[-KEPT_OUTPUT:]
        return len(text)


def _raise_exit(status: int = 0) -> NoReturn:
    raise _Exited(status)


@contextlib.contextmanager
def user_code(what: str, path: Path) -> Iterator[None]:
    """Run the block as the user's code from the file `path`, described as `what` in errors."""
    import posix

    try:
        cwd = os.getcwd()
    except FileNotFoundError:
        raise ModelError(
            "the working directory no longer exists; cd to an existing folder and run again"
        ) from None
    saved_path, saved_exit = list(sys.path), (os._exit, posix._exit)
    sys.path.insert(0, str(Path(path).resolve().parent))
    output = _Tail()
    os._exit = posix._exit = _raise_exit
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            yield
    except UserCodeInterrupt:
        raise
    except KeyboardInterrupt:
        raise UserCodeInterrupt(
            f"{what} was interrupted (KeyboardInterrupt) before it returned; nothing of it is "
            "kept: run the command again"
        ) from None
    except ModelError:
        raise
    except _Exited as exited:
        raise UserCodeError(
            f"{what} called os._exit({exited.status}) instead of returning",
            _details(None, output.text),
        ) from None
    except SystemExit as exited:
        raise UserCodeError(
            f"{what} called sys.exit({exited.code!r}) instead of returning",
            _details(exited, output.text),
        ) from None
    except BaseException as error:  # the user's code may raise anything
        raise UserCodeError(
            f"{what} raised {type(error).__name__}: {first_line(error)[:300]}",
            _details(error, output.text),
        ) from None
    finally:
        os._exit, posix._exit = saved_exit
        sys.path[:] = saved_path
        with contextlib.suppress(OSError):
            os.chdir(cwd)


def _details(error: BaseException | None, output: str) -> str:
    """The user's traceback (tune's frames and importlib's left out) and the end of its output."""
    parts = []
    if error is not None:
        found = traceback.TracebackException.from_exception(error)
        found.stack = traceback.StackSummary.from_list(
            [f for f in found.stack if not _tunes(f.filename)]
        )
        parts.append("".join(found.format()).rstrip())
    if output.strip():
        parts.append(f"its last output:\n{output.rstrip()}")
    return "\n".join(parts)


def _tunes(filename: str) -> bool:
    """Whether a frame is tune's own or the import machinery's, not the user's."""
    if filename.startswith("<frozen"):
        return True
    return str(Path(filename).resolve()).startswith(_TUNES)
