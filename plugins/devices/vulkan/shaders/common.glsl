// Shared by every kernel. Tensors are bound one storage buffer per binding; the descriptor
// starts at an offset aligned to minStorageBufferOffsetAlignment, so each binding's first
// element is pc.off[binding] elements (of the binding's type) further on (see executable.cpp).
#extension GL_GOOGLE_include_directive : require

// Storage type of float tensors. Every kernel is compiled twice (see CMakeLists.txt): as is,
// and with LOOM_F16 for precision=f16, where activations and weights are stored as fp16
// (VK_KHR_16bit_storage) and arithmetic stays f32. Kernels read float(buf[i]) and write
// STORE_T(v); in the f32 build both are no-ops.
#ifdef LOOM_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif

layout(push_constant) uniform PushConstants {
  uint off[8];
} pc;

// Linear invocation index of a 1-D kernel dispatched on a 2-D grid of workgroups (the grid is
// folded when the count exceeds maxComputeWorkGroupCount[0]). A macro, not a function: it
// must expand after the shader's layout(local_size_x_id = 0) declaration, or glslang binds
// gl_WorkGroupSize to the unspecialized default (1, 1, 1).
#define global_index()                                                            \
  ((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + \
   gl_LocalInvocationID.x)

// Linear workgroup index (one workgroup per row in the row-reduction kernels).
uint group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
