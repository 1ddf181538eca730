"""InferenceSession and the runtime behind it, shaped like onnxruntime's Python API."""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

import numpy as np

from . import _loom
from . import _types as T
from ._errors import InvalidArgument, PluginError

#: What ``path_or_bytes`` takes: a file, or the model's bytes.
ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
#: The formats ``format=`` names for bytes (the format plugins' names).
FORMATS = ("onnx", "loom", "tflite", "ncnn")

_LOG_LEVELS = {"debug": 0, "info": 1, "warning": 2, "error": 3}
_PRECISIONS = ("f32", "bf16", "f16")
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


# Element types NumPy has natively (no ml_dtypes, no strings): the arrays of run's fast path.
_FAST_DTYPES = frozenset(
    np.dtype(t)
    for t in (np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
              np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)
)
_FAST_CODES = frozenset(
    (T.FLOAT32, T.FLOAT64, T.FLOAT16, T.INT8, T.INT16, T.INT32, T.INT64,
     T.UINT8, T.UINT16, T.UINT32, T.UINT64, T.BOOL)
)


def _check_int(what, value, low, high=_INT64_MAX):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{what} must be an integer, got {type(value).__name__} {value!r}")
    if not low <= int(value) <= high:
        raise ValueError(f"{what} must be in [{low}, {high}], got {value}")
    return int(value)


def _check_token(what, text, forbidden):
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a string, got {type(text).__name__} {text!r}")
    bad = [c for c in forbidden if c in text]
    if bad or not text:
        raise ValueError(f"{what} {text!r} must be non-empty and must not contain {' or '.join(map(repr, forbidden))}")
    return text


class Runtime:
    """Loom's plugin runtime (loom_runtime_t): the plugins found and loaded.

    ``plugins``: extra plugin files or directories, searched first (a file named here that fails
    to load raises PluginError). ``default_plugins``: also the directory next to libloom (the
    package's own plugins) and the build tree. ``env_path``: honour LOOM_PLUGIN_PATH.
    """

    def __init__(
        self,
        plugins=(),
        *,
        default_plugins=True,
        env_path=True,
        log_level="warning",
        isolate_plugin_probe=False,
        allow_newer_opsets=None,
    ):
        if isinstance(plugins, (str, os.PathLike)):
            plugins = [plugins]
        paths = [os.fspath(p) for p in plugins]
        for p in paths:
            if not os.path.exists(p):
                raise PluginError(f"plugin path '{p}' does not exist")
        if log_level not in _LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(_LOG_LEVELS)}, got {log_level!r}")
        if allow_newer_opsets not in (None, True, False):
            raise ValueError(f"allow_newer_opsets must be None, True or False, got {allow_newer_opsets!r}")
        newer = {None: 0, True: 1, False: -1}[allow_newer_opsets]
        self._runtime = _loom.Runtime(
            paths, bool(env_path), bool(default_plugins), _LOG_LEVELS[log_level], bool(isolate_plugin_probe), newer
        )
        failed = [r for r in self._runtime.plugins() if r["explicit"] and not r["loaded"]]
        if failed:
            raise PluginError("; ".join(f"plugin {r['path']}: {r['error']}" for r in failed))

    def plugins(self) -> list[dict[str, Any]]:
        """Every plugin found: dicts with path, loaded, explicit, name, version, abi_version,
        registered, error and warnings."""
        return self._runtime.plugins()

    def devices(self) -> list[dict[str, Any]]:
        """Every device instance of the loaded device plugins: dicts with family, name,
        description, available, unavailable_reason and host_memory."""
        return self._runtime.devices()


_default_runtime = None
_default_lock = threading.Lock()


def default_runtime() -> Runtime:
    """The runtime shared by sessions that ask for no plugins or runtime options of their own."""
    global _default_runtime
    with _default_lock:
        if _default_runtime is None:
            _default_runtime = Runtime()
        return _default_runtime


def list_plugins() -> list[dict[str, Any]]:
    """The plugins the default runtime found (loaded or skipped, with the reason)."""
    return default_runtime().plugins()


def list_devices() -> list[dict[str, Any]]:
    """The device instances of the default runtime's device plugins."""
    return default_runtime().devices()


class NodeArg:
    """A graph input or output, as onnxruntime's NodeArg: name, shape and type.

    ``shape`` holds an int per static dimension, the symbolic name (a str) of a symbolic one,
    and None for a dimension nothing names; it is None when even the rank is unknown. For a
    sequence or optional, shape and ``type``'s element describe the elements.
    """

    __slots__ = ("name", "shape", "type", "dtype", "kind")

    def __init__(self, info):
        self.name = info.name
        self.kind = info.kind
        self.type = T.ort_type(info.dtype, info.kind)
        self.dtype = info.dtype
        if info.rank < 0:
            self.shape = None
        else:
            self.shape = [
                p if p is not None else (d if d >= 0 else None) for d, p in zip(info.dims, info.dim_params)
            ]

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    """onnxruntime's ModelMetadata, as far as Loom knows it: the format and the metadata map."""

    def __init__(self, fmt, pairs):
        self.format = fmt
        self.custom_metadata_map = dict(pairs)

    def __repr__(self):
        return f"ModelMetadata(format={self.format!r}, custom_metadata_map={self.custom_metadata_map!r})"


def _join_map(what, mapping, value_check=None):
    """{key: value} -> "key=value;..." with both checked for ';' and '='."""
    if mapping is None:
        return ""
    if isinstance(mapping, str):
        raise ValueError(f"{what} must be a dict, got the string {mapping!r}")
    if not isinstance(mapping, Mapping):
        raise ValueError(f"{what} must be a dict, got {type(mapping).__name__}")
    parts = []
    for key, value in mapping.items():
        _check_token(f"{what} key", key, ";=")
        if isinstance(value, bool):
            value = "1" if value else "0"
        if value_check:
            value = value_check(key, value)
        value = str(value)
        if ";" in value:
            raise ValueError(f"{what}[{key!r}] = {value!r} must not contain ';'")
        parts.append(f"{key}={value}")
    return ";".join(parts)


def _shape_text(name, dims):
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
        raise ValueError(f"shape_overrides[{name!r}] must be a sequence of ints, got {dims!r}")
    return "x".join(str(_check_int(f"shape_overrides[{name!r}] dimension", d, 0)) for d in dims)


class InferenceSession:
    """A model loaded and compiled for the devices given, run with :meth:`run`.

    Shaped like onnxruntime.InferenceSession: ``InferenceSession(path, providers=[...])``
    becomes ``InferenceSession(path, devices=[...])``. Every argument maps onto Loom's session or
    runtime options (docs/python.md); one Loom cannot honour raises ValueError.
    """

    def __init__(
        self,
        path_or_bytes: ModelSource,
        devices: Union[str, Sequence[str]] = ("onednn", "cpu"),
        threads: int = 0,
        precision: str = "f32",
        no_fallback: bool = False,
        device_options: Optional[Mapping[str, Any]] = None,
        plugins: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]] = (),
        shape_overrides: Optional[Mapping[str, Sequence[int]]] = None,
        *,
        base_dir: Union[str, "os.PathLike[str]", None] = None,
        format: Optional[str] = None,
        placements: Optional[Mapping[str, str]] = None,
        cost_model: Optional[Mapping[str, Any]] = None,
        plan_cache_entries: int = 0,
        plan_cache_bytes: int = 0,
        max_tensor_bytes: int = 0,
        max_run_bytes: int = 0,
        max_loop_iterations: int = 0,
        deadline_ms: int = 0,
        max_concurrent_runs: int = 0,
        runtime: Optional[Runtime] = None,
        log_level: Optional[str] = None,
        allow_newer_opsets: Optional[bool] = None,
        isolate_plugin_probe: bool = False,
        sess_options: None = None,
        providers: None = None,
        provider_options: None = None,
    ) -> None:
        # onnxruntime's arguments that Loom has no equivalent for, refused rather than ignored.
        if providers is not None:
            raise ValueError("loom.InferenceSession takes devices=[...] (e.g. ['onednn', 'cpu']), not providers=")
        if provider_options is not None:
            raise ValueError("loom.InferenceSession takes device_options={key: value}, not provider_options=")
        if sess_options is not None:
            raise ValueError(
                "loom.InferenceSession has no SessionOptions: pass threads=, max_tensor_bytes=, ... "
                "as keyword arguments (docs/python.md)"
            )

        if isinstance(devices, str):
            devices = [d.strip() for d in devices.split(",")]
        devices = [_check_token("device", d, ",; ") for d in devices]
        if not devices:
            raise ValueError("devices must name at least one device, e.g. ['cpu']")
        threads = _check_int("threads", threads, 0, _INT32_MAX)
        if precision not in _PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(_PRECISIONS)}, got {precision!r}")
        if not isinstance(no_fallback, bool):
            raise ValueError(f"no_fallback must be True or False, got {no_fallback!r}")
        dev_opts = _join_map("device_options", device_options)
        if precision != "f32":  # f32 is every device's default, as infer-run --precision
            if device_options and "precision" in device_options:
                raise ValueError("precision= and device_options['precision'] both given")
            dev_opts += (";" if dev_opts else "") + f"precision={precision}"
        placements_text = _join_map("placements", placements)
        cost_text = _join_map("cost_model", cost_model)
        overrides = _join_map("shape_overrides", shape_overrides, _shape_text)
        limits = dict(
            plan_cache_entries=_check_int("plan_cache_entries", plan_cache_entries, 0),
            plan_cache_bytes=_check_int("plan_cache_bytes", plan_cache_bytes, 0),
            max_tensor_bytes=_check_int("max_tensor_bytes", max_tensor_bytes, -1),
            max_run_bytes=_check_int("max_run_bytes", max_run_bytes, -1),
            max_loop_iterations=_check_int("max_loop_iterations", max_loop_iterations, -1),
            deadline_ms=_check_int("deadline_ms", deadline_ms, 0),
            max_concurrent_runs=_check_int("max_concurrent_runs", max_concurrent_runs, 0, _INT32_MAX),
        )

        if isinstance(plugins, (str, os.PathLike)):
            plugins = [plugins]
        runtime_options = dict(
            log_level=log_level, allow_newer_opsets=allow_newer_opsets, isolate_plugin_probe=isolate_plugin_probe
        )
        own_runtime = plugins or log_level is not None or allow_newer_opsets is not None or isolate_plugin_probe
        if runtime is not None:
            if own_runtime:
                raise ValueError(
                    "plugins=, log_level=, allow_newer_opsets= and isolate_plugin_probe= configure a "
                    "runtime: give them to loom.Runtime(...), not with runtime="
                )
        elif own_runtime:
            runtime_options["log_level"] = log_level or "warning"
            runtime = Runtime(plugins, **runtime_options)
        else:
            runtime = default_runtime()
        self._runtime = runtime
        self._devices = devices

        args = (
            ",".join(devices),
            threads,
            no_fallback,
            dev_opts,
            placements_text,
            cost_text,
            overrides,
            limits["plan_cache_entries"],
            limits["plan_cache_bytes"],
            limits["max_tensor_bytes"],
            limits["max_run_bytes"],
            limits["max_loop_iterations"],
            limits["deadline_ms"],
            limits["max_concurrent_runs"],
        )
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            # loom_model_load_memory: the core copies the bytes (read in place here, no copy on
            # this side) and probes them unless format= names the format plugin.
            if format is not None and format not in FORMATS:
                raise ValueError(f"format must be one of {', '.join(FORMATS)} (or None to probe), got {format!r}")
            view = memoryview(path_or_bytes)
            if not view.contiguous:
                view = memoryview(view.tobytes())
            data = np.frombuffer(view, dtype=np.uint8) if view.nbytes else np.empty(0, np.uint8)
            base = None if base_dir is None else os.fspath(base_dir)
            if base is not None and not os.path.isdir(base):
                raise ValueError(f"base_dir '{base}' is not a directory")
            self._session = _loom.Session(runtime._runtime, "", data, format or "", base, *args)
            self._model_path = None
        else:
            if format is not None or base_dir is not None:
                raise ValueError(
                    "format= and base_dir= are for a model given as bytes; a file is probed by "
                    "content and its external data is read from its own directory"
                )
            if not isinstance(path_or_bytes, (str, os.PathLike)):
                raise ValueError(
                    f"path_or_bytes must be a path or bytes, got {type(path_or_bytes).__name__}"
                )
            path = os.fspath(path_or_bytes)
            self._session = _loom.Session(runtime._runtime, path, None, "", None, *args)
            self._model_path = path
        self._inputs = [NodeArg(i) for i in self._session.inputs()]
        self._outputs = [NodeArg(o) for o in self._session.outputs()]
        self._input_by_name = {i.name: i for i in self._inputs}
        # run's fast path (_loom.Session.run_tensors): plain tensor inputs, and outputs that are
        # all tensors of a NumPy-native element type.
        self._tensor_inputs = {i.name for i in self._inputs if i.kind == T.KIND_TENSOR}
        self._fast_outputs = all(
            o.kind == T.KIND_TENSOR and o.dtype in _FAST_CODES for o in self._outputs
        )
        self._output_index = {o.name: k for k, o in enumerate(self._outputs)}

    # ---- onnxruntime's API ----
    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        """The devices asked for, in priority order (onnxruntime: the providers)."""
        return list(self._devices)

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._session.format(), self._session.metadata())

    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, Any],
        run_options: None = None,
    ) -> list[Any]:
        """Runs the model: ``input_feed`` maps input names to arrays (NumPy arrays, or any CPU
        tensor with ``__dlpack__``; lists for sequences, None for an absent optional); returns
        the outputs named (all when None) in that order, as NumPy arrays (lists for sequences,
        None for an absent optional)."""
        if run_options is not None:
            raise ValueError(
                "loom has no RunOptions: limits and the deadline are keyword arguments of "
                "InferenceSession, cancel with session.cancel()"
            )
        if type(input_feed) is not dict and not isinstance(input_feed, Mapping):
            raise ValueError(f"input_feed must be a dict {{name: array}}, got {type(input_feed).__name__}")
        if output_names is None:
            picks = None
        else:
            if isinstance(output_names, str):
                raise ValueError("output_names must be a list of names (or None), not a string")
            picks = []
            for n in output_names:
                if n not in self._output_index:
                    raise InvalidArgument(
                        f"no output named '{n}'; the model's outputs: {', '.join(self._output_index) or '(none)'}"
                    )
                picks.append(self._output_index[n])
        if self._fast_outputs:
            names, arrays = [], []
            for name, value in input_feed.items():
                if (
                    type(value) is not np.ndarray
                    or value.dtype not in _FAST_DTYPES
                    or not value.flags.c_contiguous
                    or name not in self._tensor_inputs
                ):
                    break
                names.append(name)
                arrays.append(value)
            else:
                results = self._session.run_tensors(names, arrays)
                if picks is None:
                    return results
                return [results[k] for k in picks]
        names, values = [], []
        for name, value in input_feed.items():
            if not isinstance(name, str):
                raise ValueError(f"input names must be strings, got {name!r}")
            names.append(name)
            values.append(_input_value(name, value, self._input_by_name.get(name)))
        results = [_output_value(r) for r in self._session.run(names, values)]
        if picks is None:
            return results
        return [results[k] for k in picks]

    # ---- Loom's own ----
    def cancel(self) -> None:
        """Ends the runs in progress (from any thread) with loom.Cancelled."""
        self._session.cancel()

    def explain(self) -> str:
        """The plan as text: devices, subgraphs, transfers, planned memory."""
        return self._session.explain()

    def plan(self) -> dict[str, Any]:
        """The plan as a dict (the C API's plan JSON)."""
        return json.loads(self._session.plan_json())

    # ---- profiling (docs/profiling.md) ----
    def start_profiling(self, max_events: int = 0) -> None:
        """Records the timings of the runs from now on (clearing earlier ones): every node, fused
        step, transfer and device call; at most max_events events (0: 1,000,000)."""
        self._session.profile_start(_check_int("max_events", max_events, 0))

    def end_profiling(self, path: Union[str, "os.PathLike[str]", None] = None) -> str:
        """Stops recording and writes the Chrome trace (Perfetto, chrome://tracing) to `path`
        (default: loom_profile_<date>_<time>.json in the working directory, like onnxruntime's
        end_profiling); returns the file's name."""
        self._session.profile_stop()
        trace = self._session.profile_trace()
        if path is None:
            path = time.strftime("loom_profile_%Y-%m-%d_%H-%M-%S.json")
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(trace)
        return path

    def profile_summary(self) -> str:
        """The recorded runs as tables: time per op type and per node, against the run time."""
        return self._session.profile_summary()

    def profile_events(self) -> list[dict[str, Any]]:
        """The recorded events as dicts (category, name, op_type, device, nodes, shapes, detail,
        run, thread, start_ns, end_ns, counted: whether the summary adds its time up)."""
        events, dropped = self._session.profile_events()
        if dropped:
            warnings.warn(f"{dropped} profile events were dropped past the event limit", stacklevel=2)
        return events

    def plan_dot(self) -> str:
        """The plan as a Graphviz digraph."""
        return self._session.plan_dot()

    def planned_peak_bytes(self) -> int:
        return self._session.planned_peak_bytes()

    def plan_cache_stats(self) -> dict[str, int]:
        return self._session.plan_cache_stats()

    def __repr__(self):
        src = self._model_path if self._model_path is not None else "<bytes>"
        return f"loom.InferenceSession({src!r}, devices={self._devices!r})"


# ---- values in and out ----


def _tensor(name, value, declared):
    """(dtype, shape, data) for the extension: data is a 1-D uint8 view of a C-contiguous array
    (the caller's own buffer when it is contiguous: no copy), or a list of bytes for strings."""
    if isinstance(value, np.ndarray):
        arr = value
    elif hasattr(value, "__dlpack__"):
        return _dlpack_tensor(name, value)
    else:
        # Python lists and scalars take the declared type (an ndarray keeps its own).
        try:
            dtype = T.numpy_dtype(declared) if declared not in (T.UNDEFINED,) else None
        except TypeError:
            dtype = None
        arr = np.asarray(value, dtype=dtype)
    code = T.loom_dtype(arr.dtype)
    if code is None:
        raise InvalidArgument(f"input '{name}': NumPy dtype {arr.dtype} has no Loom element type")
    shape = list(arr.shape)
    if code == T.STRING:
        items = []
        for s in arr.reshape(-1).tolist():
            if isinstance(s, str):
                items.append(s.encode("utf-8"))
            elif isinstance(s, bytes):
                items.append(s)
            else:
                raise InvalidArgument(f"input '{name}': a string tensor holds {type(s).__name__} {s!r}")
        return (code, shape, items)
    if not arr.flags.c_contiguous:
        arr = np.array(arr, order="C")  # the one copy
    return (code, shape, arr.reshape(-1).view(np.uint8))


def _dlpack_tensor(name, value):
    """A tensor from another framework (torch, JAX, CuPy, ...) through DLPack: read in place
    when C-contiguous and in host memory (the extension imports it; no NumPy in between, so
    bfloat16 works without ml_dtypes), copied once otherwise."""
    try:
        return _loom.dlpack_tensor(value)
    except (TypeError, ValueError) as e:
        reason = str(e)
        if isinstance(e, TypeError) and "incompatible function arguments" in reason:
            # nanobind could not import it: ask the producer why (torch: requires_grad, ...).
            try:
                value.__dlpack__()
                reason = f"{type(value).__name__}.__dlpack__() gave no tensor Loom can read"
            except Exception as why:  # noqa: BLE001 - the producer's own reason, whatever it is
                reason = f"{type(value).__name__}.__dlpack__() failed: {why}"
        raise InvalidArgument(f"input '{name}': {reason}") from None


def _input_value(name, value, info):
    kind = info.kind if info is not None else T.KIND_TENSOR
    elem = info.dtype if info is not None else T.UNDEFINED
    optional = kind in (T.KIND_OPTIONAL_TENSOR, T.KIND_OPTIONAL_SEQUENCE)
    if value is None:
        if not optional:
            raise InvalidArgument(f"input '{name}' is a {T.ort_type(elem, kind)}: None is only for optional inputs")
        return (kind, False, elem, [])
    if kind in (T.KIND_SEQUENCE, T.KIND_OPTIONAL_SEQUENCE):
        if not isinstance(value, (list, tuple)):
            raise InvalidArgument(
                f"input '{name}' is a {T.ort_type(elem, kind)}: pass a list of arrays, got {type(value).__name__}"
            )
        return (kind, True, elem, [_tensor(f"{name}[{k}]", v, elem) for k, v in enumerate(value)])
    return (kind, True, elem, [_tensor(name, value, elem)])


def _array(dtype, payload):
    if dtype == T.STRING:
        shape, items = payload
        out = np.empty(len(items), dtype=object)
        out[:] = [b.decode("utf-8", errors="surrogateescape") for b in items]
        return out.reshape(shape)
    if dtype == T.BFLOAT16:
        return payload.view(T.bfloat16_dtype())  # uint16 over Loom's buffer: still no copy
    return payload


def _output_value(result):
    kind, has_value, tensors = result
    arrays = [_array(d, p) for d, p in tensors]
    if kind == T.KIND_TENSOR:
        return arrays[0]
    if not has_value:
        return None
    if kind == T.KIND_OPTIONAL_TENSOR:
        return arrays[0]
    return arrays
