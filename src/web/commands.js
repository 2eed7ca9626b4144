// The JavaScript half of src/web/commands.rs: WebGPU methods called so that a
// throw comes back as an error value (the Rust declarations are `catch`). The
// encoder functions take any encoder that has the method (a render pass and a
// render bundle encoder share the drawing commands).
export function try_set_pipeline(o, pipeline) { return o.setPipeline(pipeline); }
export function try_set_bind_group(o, index, group) { return o.setBindGroup(index, group); }
export function try_set_bind_group_with_offsets(o, index, group, offsets) { return o.setBindGroup(index, group, offsets); }
export function try_set_vertex_buffer(o, slot, buffer, offset, size) { return size < 0 ? o.setVertexBuffer(slot, buffer, offset) : o.setVertexBuffer(slot, buffer, offset, size); }
export function try_set_index_buffer(o, buffer, format, offset, size) { return size < 0 ? o.setIndexBuffer(buffer, format, offset) : o.setIndexBuffer(buffer, format, offset, size); }
export function try_draw(o, vertex_count, instance_count, first_vertex, first_instance) { return o.draw(vertex_count, instance_count, first_vertex, first_instance); }
export function try_draw_indexed(o, index_count, instance_count, first_index, base_vertex, first_instance) { return o.drawIndexed(index_count, instance_count, first_index, base_vertex, first_instance); }
export function try_draw_indirect(o, buffer, offset) { return o.drawIndirect(buffer, offset); }
export function try_draw_indexed_indirect(o, buffer, offset) { return o.drawIndexedIndirect(buffer, offset); }
export function try_set_immediates(o, offset, data) { return o.setImmediates(offset, data); }
export function try_push_debug_group(o, label) { return o.pushDebugGroup(label); }
export function try_pop_debug_group(o) { return o.popDebugGroup(); }
export function try_insert_debug_marker(o, label) { return o.insertDebugMarker(label); }
export function try_set_scissor_rect(o, x, y, width, height) { return o.setScissorRect(x, y, width, height); }
export function try_set_blend_constant(o, r, g, b, a) { return o.setBlendConstant({ r, g, b, a }); }
export function try_set_stencil_reference(o, reference) { return o.setStencilReference(reference); }
export function try_execute_bundles(o, bundles) { return o.executeBundles(bundles); }
export function try_begin_occlusion_query(o, index) { return o.beginOcclusionQuery(index); }
export function try_end_occlusion_query(o) { return o.endOcclusionQuery(); }
export function try_dispatch_workgroups_indirect(o, buffer, offset) { return o.dispatchWorkgroupsIndirect(buffer, offset); }
export function try_copy_buffer_to_texture(o, source, destination, size) { return o.copyBufferToTexture(source, destination, size); }
export function try_copy_texture_to_buffer(o, source, destination, size) { return o.copyTextureToBuffer(source, destination, size); }
export function try_copy_texture_to_texture(o, source, destination, size) { return o.copyTextureToTexture(source, destination, size); }
export function try_clear_buffer_range(o, buffer, offset, size) { return size < 0 ? o.clearBuffer(buffer, offset) : o.clearBuffer(buffer, offset, size); }
export function try_resolve_query_set(o, set, first, count, destination, offset) { return o.resolveQuerySet(set, first, count, destination, offset); }
export function try_begin_compute_pass_with(o, desc) { return o.beginComputePass(desc); }
export function try_create_render_bundle_encoder(o, desc) { return o.createRenderBundleEncoder(desc); }
export function try_finish_bundle(o, desc) { return o.finish(desc); }
export function try_import_external_texture(o, desc) { return o.importExternalTexture(desc); }
export function try_write_buffer(o, buffer, offset, data) { return o.writeBuffer(buffer, offset, data); }
export function try_write_texture(o, destination, data, layout, size) { return o.writeTexture(destination, data, layout, size); }
export function try_copy_external_image_to_texture(o, source, destination, size) { return o.copyExternalImageToTexture(source, destination, size); }
// A promise in every case: a synchronous throw becomes a rejection.
export function try_on_submitted_work_done(o) { try { return o.onSubmittedWorkDone(); } catch (e) { return Promise.reject(e); } }
export function try_map_async(o, mode, offset, size) { try { return size < 0 ? o.mapAsync(mode, offset) : o.mapAsync(mode, offset, size); } catch (e) { return Promise.reject(e); } }
export function try_get_mapped_range(o, offset, size) { return size < 0 ? o.getMappedRange(offset) : o.getMappedRange(offset, size); }
export function try_unmap(o) { return o.unmap(); }
