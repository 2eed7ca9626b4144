// The JavaScript half of src/web/bindings.rs.
export function try_create_bind_group(o, desc) { return o.createBindGroup(desc); }
export function try_create_pipeline_layout(o, desc) { return o.createPipelineLayout(desc); }
export function try_create_sampler(o, desc) { return o.createSampler(desc); }
export function try_create_shader_module(o, desc) { return o.createShaderModule(desc); }
export function try_create_command_encoder(o, desc) { return o.createCommandEncoder(desc); }
export function try_submit(o, buffers) { return o.submit(buffers); }
export function try_finish(o) { return o.finish(); }
export function try_begin_compute_pass(o, desc) { return o.beginComputePass(desc); }
export function try_clear_buffer(o, buffer) { return o.clearBuffer(buffer); }
export function try_copy_buffer_to_buffer(o, source, source_offset, destination, destination_offset, size) { return o.copyBufferToBuffer(source, source_offset, destination, destination_offset, size); }
export function try_set_viewport(o, x, y, width, height, min_depth, max_depth) { return o.setViewport(x, y, width, height, min_depth, max_depth); }
export function try_end_render_pass(o) { return o.end(); }
export function try_set_compute_pipeline(o, pipeline) { return o.setPipeline(pipeline); }
export function try_set_compute_bind_group(o, index, group) { return o.setBindGroup(index, group); }
export function try_dispatch_workgroups(o, x, y, z) { return o.dispatchWorkgroups(x, y, z); }
export function try_end_compute_pass(o) { return o.end(); }
export function try_unconfigure(o) { return o.unconfigure(); }
export function preferred_canvas_format(gpu) { return gpu.getPreferredCanvasFormat(); }
export function try_configure(context, device, format, alphaMode) { return context.configure({ device, format, alphaMode }); }
export function try_destroy_device(o) { return o.destroy(); }
