// Tensors between Python and the C API (loom/loom.h) for loom._loom: NumPy's and DLPack's element
// types, the inputs the Python side hands over (borrowed for the call) and the outputs handed
// back (NumPy arrays over the core's buffers, owned by capsules).
#pragma once

#include <loom/loom.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
// The type casters of every standard type either file converts: each translation unit must see
// the same casters (without stl/vector.h, nb::cast of a std::vector throws std::bad_cast).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

namespace loom::python {

namespace nb = nanobind;

// NumPy's view of an element type; BFLOAT16 travels as uint16 (NumPy has no bfloat16: the
// Python side views it as ml_dtypes.bfloat16). STRING is handled apart.
nb::dlpack::dtype numpy_dtype(loom_dtype_t dtype);

// Loom's element type for a DLPack dtype, or LOOM_DTYPE_UNDEFINED.
loom_dtype_t loom_dtype(nb::dlpack::dtype dt);

using Bytes = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// One input value as the Python side hands it over: (kind, has_value, elem_dtype, tensors),
// each tensor (dtype, shape, data) with data a 1-D uint8 view of a C-contiguous array, or for
// strings a list of bytes.
struct InputValues {
  std::vector<std::string> names;
  std::vector<std::vector<loom_host_tensor_t>> tensors;
  std::vector<std::vector<loom_string_t>> strings;  // per tensor of strings (buffers stay put)
  std::vector<loom_value_t> values;
  std::vector<nb::object> keep;  // the arrays and bytes the core reads, alive for the call
};

// Fills `t` from one (dtype, shape, data) tuple of input `name`, borrowing its buffers.
void fill_tensor(const std::string& name, nb::handle item, InputValues& in, loom_host_tensor_t& t);

using AnyTensor = nb::ndarray<nb::ro>;

// A DLPack tensor as run() takes a NumPy input: (dtype, shape, 1-D uint8 array of its bytes).
// A C-contiguous tensor is read in place (the array holds the imported tensor, and so the
// producer's buffer, alive); any other layout is copied once into a new contiguous buffer, as
// a strided NumPy input is. Only host memory: the core reads the bytes with the CPU.
nb::tuple dlpack_tensor(const AnyTensor& tensor);

// A value loom_session_run_values made, released (and freed) with the last reference.
void release_value(loom_value_t* v);
using ValuePtr = std::shared_ptr<loom_value_t>;

// (dtype, NumPy array over tensor `index` of `value`, no copy); strings come back as
// (dtype, (shape, [bytes])).
nb::object output_tensor(const ValuePtr& value, size_t index);

// A NumPy array owning a tensor loom_session_run made (`t` is emptied: the array's capsule
// releases the buffer when the last view of it dies).
nb::object host_tensor_array(loom_host_tensor_t& t);

}  // namespace loom::python
