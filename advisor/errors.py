"""The project's one error type: a one-line message for the user, exit code 2."""


class AdvisorError(Exception):
    """Bad input or an unavailable model/hardware. `str(err)` is the one line shown on stderr."""

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))


class NotFound(AdvisorError):
    """A model reference that no source (local path, Hub, bundled catalog) holds."""
