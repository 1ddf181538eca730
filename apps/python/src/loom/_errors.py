"""Loom's status codes as Python exceptions.

Every failed call of the C API raises the class of its status code, with Loom's one-line message
as the message. All derive from :class:`LoomError`, whose ``code`` is the numeric
``loom_status_code_t``; argument and lookup errors also derive from ``ValueError``/``KeyError``
and friends so that code written for onnxruntime's exceptions keeps catching them.
"""


class LoomError(Exception):
    """Base of every error Loom reports. ``code`` is the C API's loom_status_code_t."""

    code = -1
    code_name = "LOOM_ERROR"


class InvalidArgument(LoomError, ValueError):
    """The caller passed something wrong: an input's name, shape or dtype, an option."""

    code, code_name = 1, "LOOM_ERROR_INVALID_ARGUMENT"


class ModelError(LoomError):
    """A malformed or hostile model."""

    code, code_name = 2, "LOOM_ERROR_INVALID_MODEL"


class Unsupported(LoomError):
    """Valid, but no loaded plugin or device can do it."""

    code, code_name = 3, "LOOM_ERROR_UNSUPPORTED"


class NotFound(LoomError, LookupError):
    """A file, name, symbol or library that is missing."""

    code, code_name = 4, "LOOM_ERROR_NOT_FOUND"


class OutOfMemory(LoomError, MemoryError):
    code, code_name = 5, "LOOM_ERROR_OUT_OF_MEMORY"


class Incompatible(LoomError):
    """An ABI or version mismatch."""

    code, code_name = 6, "LOOM_ERROR_INCOMPATIBLE"


class DeviceError(LoomError):
    """A device that exists but cannot be used here (no driver...)."""

    code, code_name = 7, "LOOM_ERROR_UNAVAILABLE"


class RunError(LoomError, RuntimeError):
    """A failure while running."""

    code, code_name = 8, "LOOM_ERROR_RUNTIME"


class InternalError(LoomError):
    """A bug in Loom: please report it."""

    code, code_name = 9, "LOOM_ERROR_INTERNAL"


class LimitExceeded(LoomError):
    """A run needed more than a limit of the session allows (the message names it)."""

    code, code_name = 10, "LOOM_ERROR_LIMIT_EXCEEDED"


class Cancelled(LoomError):
    """The run was cancelled (Session.cancel) or passed its deadline."""

    code, code_name = 11, "LOOM_ERROR_CANCELLED"


class PluginError(LoomError):
    """A plugin asked for explicitly (``plugins=[...]``) did not load."""

    code, code_name = 4, "LOOM_ERROR_NOT_FOUND"


BY_CODE = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        ModelError,
        Unsupported,
        NotFound,
        OutOfMemory,
        Incompatible,
        DeviceError,
        RunError,
        InternalError,
        LimitExceeded,
        Cancelled,
    )
}
