"""Loom from Python: ``loom.InferenceSession`` runs ONNX (and .loom, TFLite, ncnn) models with
an API shaped like onnxruntime's. See docs/python.md.

    import loom, numpy as np
    session = loom.InferenceSession("model.onnx", devices=["onednn", "cpu"])
    outputs = session.run(None, {"input": np.zeros((1, 3, 224, 224), np.float32)})
"""

from . import _loom
from ._errors import (
    Cancelled,
    DeviceError,
    Incompatible,
    InternalError,
    InvalidArgument,
    LimitExceeded,
    LoomError,
    ModelError,
    NotFound,
    OutOfMemory,
    PluginError,
    RunError,
    Unsupported,
)
from ._errors import BY_CODE as _BY_CODE
from ._session import (
    InferenceSession,
    ModelMetadata,
    NodeArg,
    Runtime,
    default_runtime,
    list_devices,
    list_plugins,
)

_loom._set_error_classes(dict(_BY_CODE))

__version__ = _loom.version()

__all__ = [
    "Cancelled",
    "DeviceError",
    "Incompatible",
    "InferenceSession",
    "InternalError",
    "InvalidArgument",
    "LimitExceeded",
    "LoomError",
    "ModelError",
    "ModelMetadata",
    "NodeArg",
    "NotFound",
    "OutOfMemory",
    "PluginError",
    "RunError",
    "Runtime",
    "Unsupported",
    "__version__",
    "default_runtime",
    "list_devices",
    "list_plugins",
]
