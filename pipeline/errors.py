"""The docfinder error hierarchy, documented in one place.

Every error docfinder raises on purpose is a :class:`DocfinderError`. Callers decide what to
do by its branch, not its message:

- :class:`TransientError`: trying again later may succeed (a model server restarting, an
  index being swapped, a timeout).
- :class:`PermanentError`: the same call will fail again until someone changes the input
  or the configuration (a corrupt file, an unknown collection, an invalid setting).

Front doors (CLI, HTTP, MCP, bots) turn these into a clear message for the user.
"""


class DocfinderError(Exception):
    """Base class of every error docfinder raises deliberately."""


class TransientError(DocfinderError):
    """A failure that may go away if the same call is made again later."""


class PermanentError(DocfinderError):
    """A failure that repeats until the input or the configuration changes."""


class ConfigurationError(PermanentError):
    """Settings, model folders or other configuration are missing or invalid."""


class InvalidRequestError(PermanentError):
    """A request names something that does not exist or breaks a limit (mode, domain, size)."""


class UnsupportedMediaError(InvalidRequestError):
    """A request body sent as another type than the one the route reads (HTTP 415)."""


class RequestTimeoutError(InvalidRequestError):
    """A request whose body did not arrive in time (HTTP 408)."""


class DocumentError(PermanentError):
    """One input document could not be read: corrupt, encrypted, empty or unsupported."""


class IndexNotFoundError(PermanentError):
    """No live index version exists at the configured location."""


class IndexCorruptError(PermanentError):
    """An index version on disk does not match its manifest."""


class IndexBusyError(TransientError):
    """Another process is writing a new index version right now."""


class NotFoundError(InvalidRequestError):
    """A request names an id (answer, passage, document) that does not exist."""


class ForbiddenError(PermanentError):
    """The caller is known but may not read what it asked for (a collection outside its scope)."""


class UnauthenticatedError(PermanentError):
    """The request carries no valid credential where one is required."""


class DatabaseUnavailableError(TransientError):
    """The database server cannot be reached right now."""


class DatabaseBusyError(TransientError):
    """Another process holds the database's write lock longer than the busy timeout."""


class ClusterUnavailableError(TransientError):
    """The distributed engine (a Ray cluster) cannot be reached, or lost the work it was given."""


class OverloadedError(TransientError):
    """Too much work is waiting already; try again in a moment."""


class LLMUnavailableError(TransientError):
    """The language model gave no usable reply: unreachable, too slow, or unreadable."""


class UnreadableReplyError(LLMUnavailableError):
    """The language model replied, but not in the form asked (cut off at its token limit, or not
    JSON); ``reply`` is its text as written, for a caller that can use part of it."""

    def __init__(self, message: str, reply: str = "") -> None:
        super().__init__(message)
        self.reply = reply


class UnknownCollectionError(InvalidRequestError):
    """A search named a collection the index does not have."""
