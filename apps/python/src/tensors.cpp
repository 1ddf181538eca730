// Tensors between Python and the C API: see tensors.hpp.
#include "tensors.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace loom::python {

nb::dlpack::dtype numpy_dtype(loom_dtype_t dtype) {
  using code = nb::dlpack::dtype_code;
  auto make = [](code c, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1};
  };
  switch (dtype) {
    case LOOM_DTYPE_FLOAT32:
      return make(code::Float, 32);
    case LOOM_DTYPE_FLOAT64:
      return make(code::Float, 64);
    case LOOM_DTYPE_FLOAT16:
      return make(code::Float, 16);
    case LOOM_DTYPE_BFLOAT16:
    case LOOM_DTYPE_UINT16:
      return make(code::UInt, 16);
    case LOOM_DTYPE_UINT8:
      return make(code::UInt, 8);
    case LOOM_DTYPE_UINT32:
      return make(code::UInt, 32);
    case LOOM_DTYPE_UINT64:
      return make(code::UInt, 64);
    case LOOM_DTYPE_INT8:
      return make(code::Int, 8);
    case LOOM_DTYPE_INT16:
      return make(code::Int, 16);
    case LOOM_DTYPE_INT32:
      return make(code::Int, 32);
    case LOOM_DTYPE_INT64:
      return make(code::Int, 64);
    case LOOM_DTYPE_BOOL:
      return make(code::Bool, 8);
    case LOOM_DTYPE_COMPLEX64:
      return make(code::Complex, 64);
    case LOOM_DTYPE_COMPLEX128:
      return make(code::Complex, 128);
    default:
      throw nb::type_error(("an output of type " + std::string(loom_dtype_name(dtype)) +
                            " cannot be handed to NumPy")
                               .c_str());
  }
}

void fill_tensor(const std::string& name, nb::handle item, InputValues& in, loom_host_tensor_t& t) {
  nb::tuple tensor = nb::cast<nb::tuple>(item);
  if (tensor.size() != 3) throw nb::value_error("internal: a tensor is (dtype, shape, data)");
  t.struct_size = sizeof t;
  t.dtype = static_cast<loom_dtype_t>(nb::cast<int>(tensor[0]));
  auto shape = nb::cast<std::vector<int64_t>>(tensor[1]);
  if (shape.size() > LOOM_MAX_RANK)
    throw nb::value_error(("input '" + name + "' has rank " + std::to_string(shape.size()) +
                           "; Loom takes at most " + std::to_string(LOOM_MAX_RANK))
                              .c_str());
  t.rank = static_cast<int32_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) t.dims[d] = shape[d];
  if (t.dtype == LOOM_DTYPE_STRING) {
    nb::list items = nb::cast<nb::list>(tensor[2]);
    auto& strings = in.strings.emplace_back();
    strings.reserve(items.size());
    for (nb::handle s : items) {
      nb::bytes b = nb::cast<nb::bytes>(s);
      strings.push_back(loom_string_t{b.c_str(), b.size()});
      in.keep.push_back(b);
    }
    t.data = strings.data();
    t.byte_size = strings.size() * sizeof(loom_string_t);
  } else {
    Bytes data = nb::cast<Bytes>(tensor[2]);
    t.data = const_cast<uint8_t*>(data.data());  // borrowed, read only by the core
    t.byte_size = data.shape(0);
    in.keep.push_back(nb::borrow(tensor[2]));
  }
}

loom_dtype_t loom_dtype(nb::dlpack::dtype dt) {
  using code = nb::dlpack::dtype_code;
  if (dt.lanes != 1) return LOOM_DTYPE_UNDEFINED;
  switch (static_cast<code>(dt.code)) {
    case code::Float:
      return dt.bits == 16   ? LOOM_DTYPE_FLOAT16
             : dt.bits == 32 ? LOOM_DTYPE_FLOAT32
             : dt.bits == 64 ? LOOM_DTYPE_FLOAT64
                             : LOOM_DTYPE_UNDEFINED;
    case code::Bfloat:
      return dt.bits == 16 ? LOOM_DTYPE_BFLOAT16 : LOOM_DTYPE_UNDEFINED;
    case code::Int:
      return dt.bits == 8    ? LOOM_DTYPE_INT8
             : dt.bits == 16 ? LOOM_DTYPE_INT16
             : dt.bits == 32 ? LOOM_DTYPE_INT32
             : dt.bits == 64 ? LOOM_DTYPE_INT64
                             : LOOM_DTYPE_UNDEFINED;
    case code::UInt:
      return dt.bits == 8    ? LOOM_DTYPE_UINT8
             : dt.bits == 16 ? LOOM_DTYPE_UINT16
             : dt.bits == 32 ? LOOM_DTYPE_UINT32
             : dt.bits == 64 ? LOOM_DTYPE_UINT64
                             : LOOM_DTYPE_UNDEFINED;
    case code::Bool:
      return dt.bits == 8 ? LOOM_DTYPE_BOOL : LOOM_DTYPE_UNDEFINED;
    case code::Complex:
      return dt.bits == 64    ? LOOM_DTYPE_COMPLEX64
             : dt.bits == 128 ? LOOM_DTYPE_COMPLEX128
                              : LOOM_DTYPE_UNDEFINED;
    default:
      return LOOM_DTYPE_UNDEFINED;
  }
}

nb::tuple dlpack_tensor(const AnyTensor& tensor) {
  if (tensor.device_type() != nb::device::cpu::value)
    throw nb::value_error(("a DLPack tensor on device type " +
                           std::to_string(tensor.device_type()) +
                           " (not the CPU): copy it to host memory first (e.g. .cpu())")
                              .c_str());
  loom_dtype_t dtype = loom_dtype(tensor.dtype());
  if (dtype == LOOM_DTYPE_UNDEFINED)
    throw nb::type_error(("a DLPack tensor of type code " + std::to_string(tensor.dtype().code) +
                          ", " + std::to_string(tensor.dtype().bits) + " bits, " +
                          std::to_string(tensor.dtype().lanes) + " lanes has no Loom element type")
                             .c_str());
  const size_t ndim = tensor.ndim();
  if (ndim > LOOM_MAX_RANK)
    throw nb::value_error(("a DLPack tensor of rank " + std::to_string(ndim) +
                           "; Loom takes at most " + std::to_string(LOOM_MAX_RANK))
                              .c_str());
  const size_t item = loom_dtype_size(dtype);
  std::vector<int64_t> shape(ndim);
  size_t count = 1;
  bool contiguous = true;
  int64_t expected = 1;  // the C-order stride of dimension d, in elements
  for (size_t k = ndim; k-- > 0;) {
    shape[k] = static_cast<int64_t>(tensor.shape(k));
    count *= tensor.shape(k);
    if (tensor.shape(k) != 1 && tensor.stride(k) != expected) contiguous = false;
    expected *= shape[k];
  }
  const size_t bytes = count * item;
  const auto* src = static_cast<const uint8_t*>(tensor.data());
  size_t one = bytes;
  if (contiguous || count == 0) {
    // The view keeps its own reference to the imported tensor (a capsule owning a copy of the
    // nb::ndarray handle), released with the last NumPy array over it.
    auto* keep = new AnyTensor(tensor);
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<AnyTensor*>(p); });
    static const uint8_t empty[16] = {};
    nb::ndarray<nb::numpy, const uint8_t, nb::ndim<1>> view(src ? src : empty, 1, &one, owner);
    return nb::make_tuple(static_cast<int>(dtype), nb::cast(shape), view.cast());
  }
  // Strided: gather element by element into a buffer of our own.
  auto* copy = new uint8_t[bytes];
  nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  std::vector<int64_t> index(ndim, 0);
  for (size_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (size_t k = 0; k < ndim; ++k) offset += index[k] * tensor.stride(k);
    std::memcpy(copy + i * item, src + offset * static_cast<int64_t>(item), item);
    for (size_t k = ndim; k-- > 0;) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
  nb::ndarray<nb::numpy, const uint8_t, nb::ndim<1>> view(copy, 1, &one, owner);
  return nb::make_tuple(static_cast<int>(dtype), nb::cast(shape), view.cast());
}

void release_value(loom_value_t* v) {
  loom_value_release(v);
  delete v;
}
nb::object output_tensor(const ValuePtr& value, size_t index) {
  const loom_host_tensor_t& t = value->tensors[index];
  std::vector<size_t> shape;
  for (int32_t d = 0; d < t.rank; ++d) shape.push_back(static_cast<size_t>(t.dims[d]));
  if (t.dtype == LOOM_DTYPE_STRING) {
    nb::list items;
    size_t count = t.byte_size / sizeof(loom_string_t);
    const auto* strings = static_cast<const loom_string_t*>(t.data);
    for (size_t i = 0; i < count; ++i) items.append(nb::bytes(strings[i].data, strings[i].size));
    return nb::make_tuple(static_cast<int>(t.dtype), nb::make_tuple(nb::cast(shape), items));
  }
  nb::dlpack::dtype dtype = numpy_dtype(t.dtype);
  // The capsule holds the value alive: its buffers go back to the core with the last array.
  auto* owner = new ValuePtr(value);
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<ValuePtr*>(p); });
  static uint8_t empty[16];  // NumPy wants a pointer even for an empty tensor
  void* data = t.data ? t.data : empty;
  nb::ndarray<nb::numpy> array(data, shape.size(), shape.data(), capsule, nullptr, dtype);
  return nb::make_tuple(static_cast<int>(t.dtype), array.cast());
}

nb::object host_tensor_array(loom_host_tensor_t& t) {
  auto* owner = new loom_host_tensor_t(t);
  t.data = nullptr;
  nb::capsule capsule(owner, [](void* p) noexcept {
    auto* h = static_cast<loom_host_tensor_t*>(p);
    loom_host_tensor_release(h);
    delete h;
  });
  size_t shape[LOOM_MAX_RANK];
  for (int32_t d = 0; d < owner->rank; ++d) shape[d] = static_cast<size_t>(owner->dims[d]);
  static uint8_t empty[16];  // NumPy wants a pointer even for an empty tensor
  void* data = owner->data ? owner->data : empty;
  nb::ndarray<nb::numpy> array(data, static_cast<size_t>(owner->rank), shape, capsule, nullptr,
                               numpy_dtype(owner->dtype));
  return array.cast();
}

}  // namespace loom::python
