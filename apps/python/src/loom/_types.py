"""Element types: Loom's loom_dtype_t, NumPy dtypes and onnxruntime's type strings."""

import numpy as np

# loom_dtype_t values (sdk/include/loom/plugin.h).
UNDEFINED, FLOAT32, UINT8, INT8, UINT16, INT16, INT32, INT64 = 0, 1, 2, 3, 4, 5, 6, 7
STRING, BOOL, FLOAT16, FLOAT64, UINT32, UINT64, COMPLEX64, COMPLEX128, BFLOAT16 = range(8, 17)

# loom_value_kind_t
KIND_TENSOR, KIND_SEQUENCE, KIND_OPTIONAL_TENSOR, KIND_OPTIONAL_SEQUENCE = 0, 1, 2, 3

# onnxruntime's spelling of each element type ("tensor(float)").
ORT_NAMES = {
    UNDEFINED: "undefined",
    FLOAT32: "float",
    UINT8: "uint8",
    INT8: "int8",
    UINT16: "uint16",
    INT16: "int16",
    INT32: "int32",
    INT64: "int64",
    STRING: "string",
    BOOL: "bool",
    FLOAT16: "float16",
    FLOAT64: "double",
    UINT32: "uint32",
    UINT64: "uint64",
    COMPLEX64: "complex64",
    COMPLEX128: "complex128",
    BFLOAT16: "bfloat16",
}

_NUMPY = {
    np.dtype(np.float32): FLOAT32,
    np.dtype(np.uint8): UINT8,
    np.dtype(np.int8): INT8,
    np.dtype(np.uint16): UINT16,
    np.dtype(np.int16): INT16,
    np.dtype(np.int32): INT32,
    np.dtype(np.int64): INT64,
    np.dtype(np.bool_): BOOL,
    np.dtype(np.float16): FLOAT16,
    np.dtype(np.float64): FLOAT64,
    np.dtype(np.uint32): UINT32,
    np.dtype(np.uint64): UINT64,
    np.dtype(np.complex64): COMPLEX64,
    np.dtype(np.complex128): COMPLEX128,
}


def _ml_dtypes():
    try:
        import ml_dtypes  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return None
    return ml_dtypes


def bfloat16_dtype():
    """ml_dtypes.bfloat16 as a NumPy dtype; a clear error when ml_dtypes is not installed."""
    ml = _ml_dtypes()
    if ml is None:
        raise TypeError(
            "bfloat16 tensors need the ml_dtypes package (pip install ml_dtypes): "
            "NumPy has no bfloat16 type"
        )
    return np.dtype(ml.bfloat16)


def loom_dtype(np_dtype):
    """loom_dtype_t of a NumPy dtype (strings: STRING), or None when Loom has no such type."""
    np_dtype = np.dtype(np_dtype)
    code = _NUMPY.get(np_dtype)
    if code is not None:
        return code
    if np_dtype.kind in "USO":
        return STRING
    if np_dtype.name == "bfloat16":
        return BFLOAT16
    return None


def numpy_dtype(code):
    """NumPy dtype of a loom_dtype_t (STRING: object)."""
    if code == STRING:
        return np.dtype(object)
    if code == BFLOAT16:
        return bfloat16_dtype()
    for np_dtype, c in _NUMPY.items():
        if c == code:
            return np_dtype
    raise TypeError(f"Loom element type {ORT_NAMES.get(code, code)} has no NumPy dtype")


def ort_type(code, kind=KIND_TENSOR):
    """onnxruntime's type string: tensor(float), seq(tensor(int64)), optional(tensor(float))..."""
    tensor = f"tensor({ORT_NAMES.get(code, 'undefined')})"
    if kind == KIND_SEQUENCE:
        return f"seq({tensor})"
    if kind == KIND_OPTIONAL_TENSOR:
        return f"optional({tensor})"
    if kind == KIND_OPTIONAL_SEQUENCE:
        return f"optional(seq({tensor}))"
    return tensor
