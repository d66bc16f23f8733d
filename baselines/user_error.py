"""The one root of the errors a user can fix: bad input, a Case or model that cannot be run, a run
folder that cannot be used as asked, a tracker that cannot be reached. Each message is one line
saying what is wrong and how to fix it; `tune` catches this root once, prints the line and exits
with 2. It lives here, on the lowest floor, because the Case and the model specs raise it too.

A `ValueError`, as each of its subclasses was before they shared a root: callers that take a
damaged file as a ValueError (strict JSON's own errors are ValueErrors) keep doing so."""


class UserError(ValueError):
    """Something the user gave that cannot be used; the message says what and how to fix it."""
