// The frozen layout of plugin ABI 1.0 and what 1.1, 1.2, 1.3, 1.4, 1.5, 1.6 and 1.7 appended. Generated once from sdk/include/loom/plugin.h and
// then kept by hand: a released layout must never change. When a minor version appends
// members, ADD assertions for them; never edit the existing ones.
#include <loom/plugin.h>

#include <gtest/gtest.h>

#include <cstddef>

static_assert(offsetof(loom_string_t, data) == 0, "ABI 1.0 layout of loom_string_t::data changed");
static_assert(offsetof(loom_string_t, size) == 8, "ABI 1.0 layout of loom_string_t::size changed");
static_assert(sizeof(loom_string_t) == 16, "ABI 1.0 layout of loom_string_t changed");
static_assert(offsetof(loom_value_info_t, struct_size) == 0, "ABI 1.0 layout of loom_value_info_t::struct_size changed");
static_assert(offsetof(loom_value_info_t, name) == 8, "ABI 1.0 layout of loom_value_info_t::name changed");
static_assert(offsetof(loom_value_info_t, dtype) == 16, "ABI 1.0 layout of loom_value_info_t::dtype changed");
static_assert(offsetof(loom_value_info_t, rank) == 20, "ABI 1.0 layout of loom_value_info_t::rank changed");
static_assert(offsetof(loom_value_info_t, dims) == 24, "ABI 1.0 layout of loom_value_info_t::dims changed");
static_assert(offsetof(loom_value_info_t, dim_params) == 32, "ABI 1.0 layout of loom_value_info_t::dim_params changed");
static_assert(offsetof(loom_value_info_t, flags) == 40, "ABI 1.0 layout of loom_value_info_t::flags changed");
static_assert(offsetof(loom_value_info_t, data) == 48, "ABI 1.0 layout of loom_value_info_t::data changed");
static_assert(offsetof(loom_value_info_t, data_size) == 56, "ABI 1.0 layout of loom_value_info_t::data_size changed");
static_assert(offsetof(loom_value_info_t, arena_offset) == 64, "ABI 1.0 layout of loom_value_info_t::arena_offset changed");
// ABI 1.7 appended loom_value_info_t::content_id: the 1.0 prefix (72 bytes) is unchanged.
static_assert(offsetof(loom_value_info_t, content_id) == 72, "ABI 1.7 layout of loom_value_info_t::content_id changed");
static_assert(sizeof(loom_value_info_t) == 80, "ABI 1.7 layout of loom_value_info_t changed");
static_assert(offsetof(loom_attribute_t, struct_size) == 0, "ABI 1.0 layout of loom_attribute_t::struct_size changed");
static_assert(offsetof(loom_attribute_t, name) == 8, "ABI 1.0 layout of loom_attribute_t::name changed");
static_assert(offsetof(loom_attribute_t, type) == 16, "ABI 1.0 layout of loom_attribute_t::type changed");
static_assert(offsetof(loom_attribute_t, i) == 24, "ABI 1.0 layout of loom_attribute_t::i changed");
static_assert(offsetof(loom_attribute_t, f) == 32, "ABI 1.0 layout of loom_attribute_t::f changed");
static_assert(offsetof(loom_attribute_t, s) == 40, "ABI 1.0 layout of loom_attribute_t::s changed");
static_assert(offsetof(loom_attribute_t, s_size) == 48, "ABI 1.0 layout of loom_attribute_t::s_size changed");
static_assert(offsetof(loom_attribute_t, count) == 56, "ABI 1.0 layout of loom_attribute_t::count changed");
static_assert(offsetof(loom_attribute_t, ints) == 64, "ABI 1.0 layout of loom_attribute_t::ints changed");
static_assert(offsetof(loom_attribute_t, floats) == 72, "ABI 1.0 layout of loom_attribute_t::floats changed");
static_assert(offsetof(loom_attribute_t, strings) == 80, "ABI 1.0 layout of loom_attribute_t::strings changed");
static_assert(offsetof(loom_attribute_t, tensor) == 88, "ABI 1.0 layout of loom_attribute_t::tensor changed");
static_assert(offsetof(loom_attribute_t, graph) == 96, "ABI 1.0 layout of loom_attribute_t::graph changed");
static_assert(sizeof(loom_attribute_t) == 104, "ABI 1.0 layout of loom_attribute_t changed");
static_assert(offsetof(loom_node_t, struct_size) == 0, "ABI 1.0 layout of loom_node_t::struct_size changed");
static_assert(offsetof(loom_node_t, name) == 8, "ABI 1.0 layout of loom_node_t::name changed");
static_assert(offsetof(loom_node_t, op_type) == 16, "ABI 1.0 layout of loom_node_t::op_type changed");
static_assert(offsetof(loom_node_t, domain) == 24, "ABI 1.0 layout of loom_node_t::domain changed");
static_assert(offsetof(loom_node_t, opset) == 32, "ABI 1.0 layout of loom_node_t::opset changed");
static_assert(offsetof(loom_node_t, num_inputs) == 40, "ABI 1.0 layout of loom_node_t::num_inputs changed");
static_assert(offsetof(loom_node_t, inputs) == 48, "ABI 1.0 layout of loom_node_t::inputs changed");
static_assert(offsetof(loom_node_t, num_outputs) == 56, "ABI 1.0 layout of loom_node_t::num_outputs changed");
static_assert(offsetof(loom_node_t, outputs) == 64, "ABI 1.0 layout of loom_node_t::outputs changed");
static_assert(offsetof(loom_node_t, num_attributes) == 72, "ABI 1.0 layout of loom_node_t::num_attributes changed");
static_assert(offsetof(loom_node_t, attributes) == 80, "ABI 1.0 layout of loom_node_t::attributes changed");
static_assert(sizeof(loom_node_t) == 88, "ABI 1.0 layout of loom_node_t changed");
static_assert(offsetof(loom_graph_t, struct_size) == 0, "ABI 1.0 layout of loom_graph_t::struct_size changed");
static_assert(offsetof(loom_graph_t, name) == 8, "ABI 1.0 layout of loom_graph_t::name changed");
static_assert(offsetof(loom_graph_t, num_values) == 16, "ABI 1.0 layout of loom_graph_t::num_values changed");
static_assert(offsetof(loom_graph_t, values) == 24, "ABI 1.0 layout of loom_graph_t::values changed");
static_assert(offsetof(loom_graph_t, num_nodes) == 32, "ABI 1.0 layout of loom_graph_t::num_nodes changed");
static_assert(offsetof(loom_graph_t, nodes) == 40, "ABI 1.0 layout of loom_graph_t::nodes changed");
static_assert(offsetof(loom_graph_t, num_inputs) == 48, "ABI 1.0 layout of loom_graph_t::num_inputs changed");
static_assert(offsetof(loom_graph_t, inputs) == 56, "ABI 1.0 layout of loom_graph_t::inputs changed");
static_assert(offsetof(loom_graph_t, num_outputs) == 64, "ABI 1.0 layout of loom_graph_t::num_outputs changed");
static_assert(offsetof(loom_graph_t, outputs) == 72, "ABI 1.0 layout of loom_graph_t::outputs changed");
static_assert(offsetof(loom_graph_t, parent) == 80, "ABI 1.0 layout of loom_graph_t::parent changed");
static_assert(sizeof(loom_graph_t) == 88, "ABI 1.0 layout of loom_graph_t changed");
static_assert(offsetof(loom_tensor_t, struct_size) == 0, "ABI 1.0 layout of loom_tensor_t::struct_size changed");
static_assert(offsetof(loom_tensor_t, dtype) == 8, "ABI 1.0 layout of loom_tensor_t::dtype changed");
static_assert(offsetof(loom_tensor_t, rank) == 12, "ABI 1.0 layout of loom_tensor_t::rank changed");
static_assert(offsetof(loom_tensor_t, dims) == 16, "ABI 1.0 layout of loom_tensor_t::dims changed");
static_assert(offsetof(loom_tensor_t, data) == 144, "ABI 1.0 layout of loom_tensor_t::data changed");
static_assert(offsetof(loom_tensor_t, buffer) == 152, "ABI 1.0 layout of loom_tensor_t::buffer changed");
static_assert(offsetof(loom_tensor_t, offset) == 160, "ABI 1.0 layout of loom_tensor_t::offset changed");
static_assert(offsetof(loom_tensor_t, byte_size) == 168, "ABI 1.0 layout of loom_tensor_t::byte_size changed");
static_assert(sizeof(loom_tensor_t) == 176, "ABI 1.0 layout of loom_tensor_t changed");
static_assert(offsetof(loom_builder_api_t, struct_size) == 0, "ABI 1.0 layout of loom_builder_api_t::struct_size changed");
static_assert(offsetof(loom_builder_api_t, set_opset) == 8, "ABI 1.0 layout of loom_builder_api_t::set_opset changed");
static_assert(offsetof(loom_builder_api_t, set_metadata) == 16, "ABI 1.0 layout of loom_builder_api_t::set_metadata changed");
static_assert(offsetof(loom_builder_api_t, add_input) == 24, "ABI 1.0 layout of loom_builder_api_t::add_input changed");
static_assert(offsetof(loom_builder_api_t, add_output) == 32, "ABI 1.0 layout of loom_builder_api_t::add_output changed");
static_assert(offsetof(loom_builder_api_t, add_value_info) == 40, "ABI 1.0 layout of loom_builder_api_t::add_value_info changed");
static_assert(offsetof(loom_builder_api_t, add_initializer) == 48, "ABI 1.0 layout of loom_builder_api_t::add_initializer changed");
static_assert(offsetof(loom_builder_api_t, add_initializer_borrowed) == 56, "ABI 1.0 layout of loom_builder_api_t::add_initializer_borrowed changed");
static_assert(offsetof(loom_builder_api_t, add_node) == 64, "ABI 1.0 layout of loom_builder_api_t::add_node changed");
static_assert(offsetof(loom_builder_api_t, set_attr_int) == 72, "ABI 1.0 layout of loom_builder_api_t::set_attr_int changed");
static_assert(offsetof(loom_builder_api_t, set_attr_float) == 80, "ABI 1.0 layout of loom_builder_api_t::set_attr_float changed");
static_assert(offsetof(loom_builder_api_t, set_attr_string) == 88, "ABI 1.0 layout of loom_builder_api_t::set_attr_string changed");
static_assert(offsetof(loom_builder_api_t, set_attr_ints) == 96, "ABI 1.0 layout of loom_builder_api_t::set_attr_ints changed");
static_assert(offsetof(loom_builder_api_t, set_attr_floats) == 104, "ABI 1.0 layout of loom_builder_api_t::set_attr_floats changed");
static_assert(offsetof(loom_builder_api_t, set_attr_strings) == 112, "ABI 1.0 layout of loom_builder_api_t::set_attr_strings changed");
static_assert(offsetof(loom_builder_api_t, set_attr_tensor) == 120, "ABI 1.0 layout of loom_builder_api_t::set_attr_tensor changed");
static_assert(offsetof(loom_builder_api_t, add_attr_graph) == 128, "ABI 1.0 layout of loom_builder_api_t::add_attr_graph changed");
// ABI 1.2 appended loom_builder_api_t::set_value_container: the 1.0 prefix (136 bytes) is
// unchanged.
static_assert(offsetof(loom_builder_api_t, set_value_container) == 136, "ABI 1.2 layout of loom_builder_api_t::set_value_container changed");
static_assert(sizeof(loom_builder_api_t) == 144, "ABI 1.2 layout of loom_builder_api_t changed");
static_assert(LOOM_VALUE_SEQUENCE == 0x10u && LOOM_VALUE_OPTIONAL == 0x20u, "ABI 1.2 value flags changed");
static_assert(offsetof(loom_load_args_t, struct_size) == 0, "ABI 1.0 layout of loom_load_args_t::struct_size changed");
static_assert(offsetof(loom_load_args_t, path) == 8, "ABI 1.0 layout of loom_load_args_t::path changed");
static_assert(offsetof(loom_load_args_t, directory) == 16, "ABI 1.0 layout of loom_load_args_t::directory changed");
static_assert(offsetof(loom_load_args_t, data) == 24, "ABI 1.0 layout of loom_load_args_t::data changed");
static_assert(offsetof(loom_load_args_t, size) == 32, "ABI 1.0 layout of loom_load_args_t::size changed");
// ABI 1.5 appended loom_load_args_t::flags: the 1.0 prefix (40 bytes) is unchanged.
static_assert(offsetof(loom_load_args_t, flags) == 40, "ABI 1.5 layout of loom_load_args_t::flags changed");
static_assert(sizeof(loom_load_args_t) == 48, "ABI 1.5 layout of loom_load_args_t changed");
static_assert(LOOM_LOAD_FROM_MEMORY == 0x1u, "ABI 1.5 load flags changed");
static_assert(offsetof(loom_format_t, struct_size) == 0, "ABI 1.0 layout of loom_format_t::struct_size changed");
static_assert(offsetof(loom_format_t, name) == 8, "ABI 1.0 layout of loom_format_t::name changed");
static_assert(offsetof(loom_format_t, description) == 16, "ABI 1.0 layout of loom_format_t::description changed");
static_assert(offsetof(loom_format_t, extensions) == 24, "ABI 1.0 layout of loom_format_t::extensions changed");
static_assert(offsetof(loom_format_t, probe) == 32, "ABI 1.0 layout of loom_format_t::probe changed");
static_assert(offsetof(loom_format_t, load) == 40, "ABI 1.0 layout of loom_format_t::load changed");
static_assert(offsetof(loom_format_t, user) == 48, "ABI 1.0 layout of loom_format_t::user changed");
// ABI 1.1 appended loom_format_t::save: the 1.0 prefix (56 bytes) is unchanged.
static_assert(offsetof(loom_format_t, save) == 56, "ABI 1.1 layout of loom_format_t::save changed");
static_assert(sizeof(loom_format_t) == 64, "ABI 1.1 layout of loom_format_t changed");
static_assert(offsetof(loom_inferred_t, struct_size) == 0, "ABI 1.0 layout of loom_inferred_t::struct_size changed");
static_assert(offsetof(loom_inferred_t, dtype) == 8, "ABI 1.0 layout of loom_inferred_t::dtype changed");
static_assert(offsetof(loom_inferred_t, rank) == 12, "ABI 1.0 layout of loom_inferred_t::rank changed");
static_assert(offsetof(loom_inferred_t, dims) == 16, "ABI 1.0 layout of loom_inferred_t::dims changed");
static_assert(sizeof(loom_inferred_t) == 144, "ABI 1.0 layout of loom_inferred_t changed");
static_assert(offsetof(loom_op_schema_t, struct_size) == 0, "ABI 1.0 layout of loom_op_schema_t::struct_size changed");
static_assert(offsetof(loom_op_schema_t, domain) == 8, "ABI 1.0 layout of loom_op_schema_t::domain changed");
static_assert(offsetof(loom_op_schema_t, op_type) == 16, "ABI 1.0 layout of loom_op_schema_t::op_type changed");
static_assert(offsetof(loom_op_schema_t, since_version) == 24, "ABI 1.0 layout of loom_op_schema_t::since_version changed");
static_assert(offsetof(loom_op_schema_t, min_inputs) == 32, "ABI 1.0 layout of loom_op_schema_t::min_inputs changed");
static_assert(offsetof(loom_op_schema_t, max_inputs) == 36, "ABI 1.0 layout of loom_op_schema_t::max_inputs changed");
static_assert(offsetof(loom_op_schema_t, min_outputs) == 40, "ABI 1.0 layout of loom_op_schema_t::min_outputs changed");
static_assert(offsetof(loom_op_schema_t, max_outputs) == 44, "ABI 1.0 layout of loom_op_schema_t::max_outputs changed");
static_assert(offsetof(loom_op_schema_t, infer) == 48, "ABI 1.0 layout of loom_op_schema_t::infer changed");
static_assert(offsetof(loom_op_schema_t, user) == 56, "ABI 1.0 layout of loom_op_schema_t::user changed");
static_assert(sizeof(loom_op_schema_t) == 64, "ABI 1.0 layout of loom_op_schema_t changed");
static_assert(offsetof(loom_kernel_context_api_t, struct_size) == 0, "ABI 1.0 layout of loom_kernel_context_api_t::struct_size changed");
static_assert(offsetof(loom_kernel_context_api_t, num_inputs) == 8, "ABI 1.0 layout of loom_kernel_context_api_t::num_inputs changed");
static_assert(offsetof(loom_kernel_context_api_t, input) == 16, "ABI 1.0 layout of loom_kernel_context_api_t::input changed");
static_assert(offsetof(loom_kernel_context_api_t, num_outputs) == 24, "ABI 1.0 layout of loom_kernel_context_api_t::num_outputs changed");
static_assert(offsetof(loom_kernel_context_api_t, allocate_output) == 32, "ABI 1.0 layout of loom_kernel_context_api_t::allocate_output changed");
static_assert(offsetof(loom_kernel_context_api_t, parallel_for) == 40, "ABI 1.0 layout of loom_kernel_context_api_t::parallel_for changed");
static_assert(sizeof(loom_kernel_context_api_t) == 48, "ABI 1.0 layout of loom_kernel_context_api_t changed");
static_assert(offsetof(loom_kernel_t, struct_size) == 0, "ABI 1.0 layout of loom_kernel_t::struct_size changed");
static_assert(offsetof(loom_kernel_t, device) == 8, "ABI 1.0 layout of loom_kernel_t::device changed");
static_assert(offsetof(loom_kernel_t, domain) == 16, "ABI 1.0 layout of loom_kernel_t::domain changed");
static_assert(offsetof(loom_kernel_t, op_type) == 24, "ABI 1.0 layout of loom_kernel_t::op_type changed");
static_assert(offsetof(loom_kernel_t, since_version) == 32, "ABI 1.0 layout of loom_kernel_t::since_version changed");
static_assert(offsetof(loom_kernel_t, create) == 40, "ABI 1.0 layout of loom_kernel_t::create changed");
static_assert(offsetof(loom_kernel_t, compute) == 48, "ABI 1.0 layout of loom_kernel_t::compute changed");
static_assert(offsetof(loom_kernel_t, destroy) == 56, "ABI 1.0 layout of loom_kernel_t::destroy changed");
static_assert(offsetof(loom_kernel_t, user) == 64, "ABI 1.0 layout of loom_kernel_t::user changed");
static_assert(sizeof(loom_kernel_t) == 72, "ABI 1.0 layout of loom_kernel_t changed");
static_assert(offsetof(loom_device_info_t, struct_size) == 0, "ABI 1.0 layout of loom_device_info_t::struct_size changed");
static_assert(offsetof(loom_device_info_t, name) == 8, "ABI 1.0 layout of loom_device_info_t::name changed");
static_assert(offsetof(loom_device_info_t, description) == 72, "ABI 1.0 layout of loom_device_info_t::description changed");
static_assert(offsetof(loom_device_info_t, available) == 328, "ABI 1.0 layout of loom_device_info_t::available changed");
static_assert(offsetof(loom_device_info_t, unavailable_reason) == 329, "ABI 1.0 layout of loom_device_info_t::unavailable_reason changed");
static_assert(offsetof(loom_device_info_t, flags) == 588, "ABI 1.0 layout of loom_device_info_t::flags changed");
// ABI 1.9 appended the cost hints: the 1.0 prefix (592 bytes) is unchanged.
static_assert(offsetof(loom_device_info_t, cost_gflops) == 592, "ABI 1.9 layout of loom_device_info_t::cost_gflops changed");
static_assert(offsetof(loom_device_info_t, cost_transfer_gbps) == 600, "ABI 1.9 layout of loom_device_info_t::cost_transfer_gbps changed");
static_assert(offsetof(loom_device_info_t, cost_transfer_latency_us) == 608, "ABI 1.9 layout of loom_device_info_t::cost_transfer_latency_us changed");
static_assert(offsetof(loom_device_info_t, cost_launch_us) == 616, "ABI 1.9 layout of loom_device_info_t::cost_launch_us changed");
static_assert(sizeof(loom_device_info_t) == 624, "ABI 1.9 layout of loom_device_info_t changed");
static_assert(offsetof(loom_device_create_args_t, struct_size) == 0, "ABI 1.0 layout of loom_device_create_args_t::struct_size changed");
static_assert(offsetof(loom_device_create_args_t, host) == 8, "ABI 1.0 layout of loom_device_create_args_t::host changed");
static_assert(offsetof(loom_device_create_args_t, instance) == 16, "ABI 1.0 layout of loom_device_create_args_t::instance changed");
static_assert(offsetof(loom_device_create_args_t, threads) == 20, "ABI 1.0 layout of loom_device_create_args_t::threads changed");
static_assert(offsetof(loom_device_create_args_t, options) == 24, "ABI 1.0 layout of loom_device_create_args_t::options changed");
static_assert(sizeof(loom_device_create_args_t) == 32, "ABI 1.0 layout of loom_device_create_args_t changed");
static_assert(offsetof(loom_support_t, struct_size) == 0, "ABI 1.0 layout of loom_support_t::struct_size changed");
static_assert(offsetof(loom_support_t, supported) == 8, "ABI 1.0 layout of loom_support_t::supported changed");
static_assert(offsetof(loom_support_t, reason) == 9, "ABI 1.0 layout of loom_support_t::reason changed");
static_assert(sizeof(loom_support_t) == 272, "ABI 1.0 layout of loom_support_t changed");
static_assert(offsetof(loom_compile_args_t, struct_size) == 0, "ABI 1.0 layout of loom_compile_args_t::struct_size changed");
static_assert(offsetof(loom_compile_args_t, graph) == 8, "ABI 1.0 layout of loom_compile_args_t::graph changed");
static_assert(offsetof(loom_compile_args_t, arena_size) == 16, "ABI 1.0 layout of loom_compile_args_t::arena_size changed");
// ABI 1.3 appended loom_compile_args_t::constant_copied and host_user: the 1.0 prefix (24
// bytes) is unchanged.
static_assert(offsetof(loom_compile_args_t, constant_copied) == 24, "ABI 1.3 layout of loom_compile_args_t::constant_copied changed");
static_assert(offsetof(loom_compile_args_t, host_user) == 32, "ABI 1.3 layout of loom_compile_args_t::host_user changed");
// ABI 1.8 appended loom_compile_args_t::free_axis: the 1.3 prefix (40 bytes) is unchanged.
static_assert(offsetof(loom_compile_args_t, free_axis) == 40, "ABI 1.8 layout of loom_compile_args_t::free_axis changed");
static_assert(sizeof(loom_compile_args_t) == 48, "ABI 1.8 layout of loom_compile_args_t changed");
static_assert(offsetof(loom_run_args_t, struct_size) == 0, "ABI 1.0 layout of loom_run_args_t::struct_size changed");
static_assert(offsetof(loom_run_args_t, num_inputs) == 8, "ABI 1.0 layout of loom_run_args_t::num_inputs changed");
static_assert(offsetof(loom_run_args_t, inputs) == 16, "ABI 1.0 layout of loom_run_args_t::inputs changed");
static_assert(offsetof(loom_run_args_t, num_outputs) == 24, "ABI 1.0 layout of loom_run_args_t::num_outputs changed");
static_assert(offsetof(loom_run_args_t, outputs) == 32, "ABI 1.0 layout of loom_run_args_t::outputs changed");
// ABI 1.4 appended loom_run_args_t::control: the 1.0 prefix (40 bytes) is unchanged.
static_assert(offsetof(loom_run_args_t, control) == 40, "ABI 1.4 layout of loom_run_args_t::control changed");
static_assert(sizeof(loom_run_args_t) == 48, "ABI 1.4 layout of loom_run_args_t changed");
static_assert(offsetof(loom_run_control_t, max_tensor_bytes) == 8, "ABI 1.4 layout of loom_run_control_t::max_tensor_bytes changed");
static_assert(offsetof(loom_run_control_t, max_run_bytes) == 16, "ABI 1.4 layout of loom_run_control_t::max_run_bytes changed");
static_assert(offsetof(loom_run_control_t, max_loop_iterations) == 24, "ABI 1.4 layout of loom_run_control_t::max_loop_iterations changed");
static_assert(offsetof(loom_run_control_t, poll) == 32, "ABI 1.4 layout of loom_run_control_t::poll changed");
static_assert(offsetof(loom_run_control_t, user) == 40, "ABI 1.4 layout of loom_run_control_t::user changed");
// ABI 1.5 appended loom_run_control_t::profile: the 1.4 prefix (48 bytes) is unchanged.
static_assert(offsetof(loom_run_control_t, profile) == 48, "ABI 1.5 layout of loom_run_control_t::profile changed");
static_assert(sizeof(loom_run_control_t) == 56, "ABI 1.5 layout of loom_run_control_t changed");
static_assert(offsetof(loom_profile_step_t, name) == 8, "ABI 1.5 layout of loom_profile_step_t::name changed");
static_assert(offsetof(loom_profile_step_t, detail) == 16, "ABI 1.5 layout of loom_profile_step_t::detail changed");
static_assert(offsetof(loom_profile_step_t, num_nodes) == 24, "ABI 1.5 layout of loom_profile_step_t::num_nodes changed");
static_assert(offsetof(loom_profile_step_t, nodes) == 32, "ABI 1.5 layout of loom_profile_step_t::nodes changed");
static_assert(offsetof(loom_profile_step_t, start_ns) == 40, "ABI 1.5 layout of loom_profile_step_t::start_ns changed");
static_assert(offsetof(loom_profile_step_t, end_ns) == 48, "ABI 1.5 layout of loom_profile_step_t::end_ns changed");
static_assert(sizeof(loom_profile_step_t) == 56, "ABI 1.5 layout of loom_profile_step_t changed");
static_assert(LOOM_ERROR_LIMIT_EXCEEDED == 10 && LOOM_ERROR_CANCELLED == 11, "ABI 1.4 status codes changed");
static_assert(offsetof(loom_device_api_t, struct_size) == 0, "ABI 1.0 layout of loom_device_api_t::struct_size changed");
static_assert(offsetof(loom_device_api_t, name) == 8, "ABI 1.0 layout of loom_device_api_t::name changed");
static_assert(offsetof(loom_device_api_t, description) == 16, "ABI 1.0 layout of loom_device_api_t::description changed");
static_assert(offsetof(loom_device_api_t, enumerate) == 24, "ABI 1.0 layout of loom_device_api_t::enumerate changed");
static_assert(offsetof(loom_device_api_t, create) == 32, "ABI 1.0 layout of loom_device_api_t::create changed");
static_assert(offsetof(loom_device_api_t, destroy) == 40, "ABI 1.0 layout of loom_device_api_t::destroy changed");
static_assert(offsetof(loom_device_api_t, get_info) == 48, "ABI 1.0 layout of loom_device_api_t::get_info changed");
static_assert(offsetof(loom_device_api_t, supports_node) == 56, "ABI 1.0 layout of loom_device_api_t::supports_node changed");
static_assert(offsetof(loom_device_api_t, alloc) == 64, "ABI 1.0 layout of loom_device_api_t::alloc changed");
static_assert(offsetof(loom_device_api_t, free_buffer) == 72, "ABI 1.0 layout of loom_device_api_t::free_buffer changed");
static_assert(offsetof(loom_device_api_t, buffer_host_ptr) == 80, "ABI 1.0 layout of loom_device_api_t::buffer_host_ptr changed");
static_assert(offsetof(loom_device_api_t, copy_to_host) == 88, "ABI 1.0 layout of loom_device_api_t::copy_to_host changed");
static_assert(offsetof(loom_device_api_t, copy_from_host) == 96, "ABI 1.0 layout of loom_device_api_t::copy_from_host changed");
static_assert(offsetof(loom_device_api_t, compile) == 104, "ABI 1.0 layout of loom_device_api_t::compile changed");
static_assert(offsetof(loom_device_api_t, release_executable) == 112, "ABI 1.0 layout of loom_device_api_t::release_executable changed");
static_assert(offsetof(loom_device_api_t, run) == 120, "ABI 1.0 layout of loom_device_api_t::run changed");
static_assert(offsetof(loom_device_api_t, user) == 128, "ABI 1.0 layout of loom_device_api_t::user changed");
static_assert(sizeof(loom_device_api_t) == 136, "ABI 1.0 layout of loom_device_api_t changed");
static_assert(offsetof(loom_plugin_info_t, struct_size) == 0, "ABI 1.0 layout of loom_plugin_info_t::struct_size changed");
static_assert(offsetof(loom_plugin_info_t, abi_version) == 8, "ABI 1.0 layout of loom_plugin_info_t::abi_version changed");
static_assert(offsetof(loom_plugin_info_t, name) == 16, "ABI 1.0 layout of loom_plugin_info_t::name changed");
static_assert(offsetof(loom_plugin_info_t, version) == 24, "ABI 1.0 layout of loom_plugin_info_t::version changed");
static_assert(offsetof(loom_plugin_info_t, description) == 32, "ABI 1.0 layout of loom_plugin_info_t::description changed");
static_assert(offsetof(loom_plugin_info_t, shutdown) == 40, "ABI 1.0 layout of loom_plugin_info_t::shutdown changed");
static_assert(sizeof(loom_plugin_info_t) == 48, "ABI 1.0 layout of loom_plugin_info_t changed");
static_assert(offsetof(loom_host_api_t, struct_size) == 0, "ABI 1.0 layout of loom_host_api_t::struct_size changed");
static_assert(offsetof(loom_host_api_t, abi_version) == 8, "ABI 1.0 layout of loom_host_api_t::abi_version changed");
static_assert(offsetof(loom_host_api_t, status_new) == 16, "ABI 1.0 layout of loom_host_api_t::status_new changed");
static_assert(offsetof(loom_host_api_t, status_code) == 24, "ABI 1.0 layout of loom_host_api_t::status_code changed");
static_assert(offsetof(loom_host_api_t, status_message) == 32, "ABI 1.0 layout of loom_host_api_t::status_message changed");
static_assert(offsetof(loom_host_api_t, status_free) == 40, "ABI 1.0 layout of loom_host_api_t::status_free changed");
static_assert(offsetof(loom_host_api_t, log) == 48, "ABI 1.0 layout of loom_host_api_t::log changed");
static_assert(offsetof(loom_host_api_t, register_format) == 56, "ABI 1.0 layout of loom_host_api_t::register_format changed");
static_assert(offsetof(loom_host_api_t, register_device) == 64, "ABI 1.0 layout of loom_host_api_t::register_device changed");
static_assert(offsetof(loom_host_api_t, register_op_schema) == 72, "ABI 1.0 layout of loom_host_api_t::register_op_schema changed");
static_assert(offsetof(loom_host_api_t, register_kernel) == 80, "ABI 1.0 layout of loom_host_api_t::register_kernel changed");
static_assert(offsetof(loom_host_api_t, find_kernel) == 88, "ABI 1.0 layout of loom_host_api_t::find_kernel changed");
static_assert(offsetof(loom_host_api_t, infer_node) == 96, "ABI 1.0 layout of loom_host_api_t::infer_node changed");
static_assert(sizeof(loom_host_api_t) == 104, "ABI 1.0 layout of loom_host_api_t changed");

// ABI 1.1: loom_save_args_t (new in 1.1).
static_assert(offsetof(loom_save_args_t, struct_size) == 0, "ABI 1.1 layout of loom_save_args_t::struct_size changed");
static_assert(offsetof(loom_save_args_t, path) == 8, "ABI 1.1 layout of loom_save_args_t::path changed");
static_assert(offsetof(loom_save_args_t, graph) == 16, "ABI 1.1 layout of loom_save_args_t::graph changed");
static_assert(offsetof(loom_save_args_t, num_opsets) == 24, "ABI 1.1 layout of loom_save_args_t::num_opsets changed");
static_assert(offsetof(loom_save_args_t, opset_domains) == 32, "ABI 1.1 layout of loom_save_args_t::opset_domains changed");
static_assert(offsetof(loom_save_args_t, opset_versions) == 40, "ABI 1.1 layout of loom_save_args_t::opset_versions changed");
static_assert(offsetof(loom_save_args_t, num_metadata) == 48, "ABI 1.1 layout of loom_save_args_t::num_metadata changed");
static_assert(offsetof(loom_save_args_t, metadata_keys) == 56, "ABI 1.1 layout of loom_save_args_t::metadata_keys changed");
static_assert(offsetof(loom_save_args_t, metadata_values) == 64, "ABI 1.1 layout of loom_save_args_t::metadata_values changed");
static_assert(offsetof(loom_save_args_t, num_declared_inputs) == 72, "ABI 1.1 layout of loom_save_args_t::num_declared_inputs changed");
static_assert(offsetof(loom_save_args_t, declared_inputs) == 80, "ABI 1.1 layout of loom_save_args_t::declared_inputs changed");
static_assert(sizeof(loom_save_args_t) == 88, "ABI 1.1 layout of loom_save_args_t changed");

// ABI 1.6 appended the dtypes of ONNX 1.14-1.23, numbered as TensorProto.DataType.
static_assert(LOOM_DTYPE_FLOAT8E4M3FN == 17 && LOOM_DTYPE_FLOAT8E4M3FNUZ == 18 &&
                  LOOM_DTYPE_FLOAT8E5M2 == 19 && LOOM_DTYPE_FLOAT8E5M2FNUZ == 20 &&
                  LOOM_DTYPE_UINT4 == 21 && LOOM_DTYPE_INT4 == 22 && LOOM_DTYPE_FLOAT4E2M1 == 23 &&
                  LOOM_DTYPE_FLOAT8E8M0 == 24 && LOOM_DTYPE_UINT2 == 25 && LOOM_DTYPE_INT2 == 26 &&
                  LOOM_DTYPE_FLOAT6E2M3 == 27 && LOOM_DTYPE_FLOAT6E3M2 == 28,
              "ABI 1.6 dtype numbering changed");

TEST(AbiLayout, VersionIsOnePointNine) {
  EXPECT_EQ(LOOM_ABI_VERSION, 0x00010009u);
  EXPECT_EQ(LOOM_MAX_RANK, 16);
  EXPECT_EQ(LOOM_DTYPE_BFLOAT16, 16);
  EXPECT_EQ(LOOM_ATTR_STRINGS, 8);
  EXPECT_EQ(LOOM_ERROR_INTERNAL, 9);
}
