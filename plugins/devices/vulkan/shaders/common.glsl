// Shared by every kernel. Tensors are bound one storage buffer per binding; the descriptor
// starts at an offset aligned to minStorageBufferOffsetAlignment, so each binding's first
// element is pc.off[binding] words further on (see executable.cpp).
#extension GL_GOOGLE_include_directive : require

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
