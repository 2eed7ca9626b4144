// The JavaScript side of the calls that carry a label: the label is read from
// the module's memory (see text.rs), and a creation's descriptor is one object
// literal (see alloc.rs).

let memory = null;
let bytes = null;
let shared = false;
let decoder = null;

export function guard_text_memory(m) {
  memory = m;
  bytes = null;
}

// The UTF-8 text at ptr..ptr+len: an ASCII string of up to 64 bytes is built in
// a loop, anything else goes through TextDecoder.
export function guard_text(ptr, len) {
  if (bytes === null || bytes.buffer !== memory.buffer) {
    bytes = new Uint8Array(memory.buffer);
    shared = typeof SharedArrayBuffer !== "undefined" && memory.buffer instanceof SharedArrayBuffer;
  }
  if (len <= 64) {
    let text = "";
    let i = 0;
    for (; i < len; i++) {
      const c = bytes[ptr + i];
      if (c > 0x7f) break;
      text += String.fromCharCode(c);
    }
    if (i === len) return text;
  }
  if (decoder === null) decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  // TextDecoder refuses views of shared memory (a threaded build): copy first.
  return decoder.decode(shared ? bytes.slice(ptr, ptr + len) : bytes.subarray(ptr, ptr + len));
}

export function guard_set_label(target, ptr, len) {
  target.label = guard_text(ptr, len);
}

export function guard_create_buffer(device, ptr, len, size, usage) {
  return device.createBuffer({ label: guard_text(ptr, len), size, usage });
}

export function guard_create_texture(device, ptr, len, format, width, height, layers, mips, samples, usage, is3d) {
  return device.createTexture({
    label: guard_text(ptr, len),
    format,
    usage,
    size: [width, height, layers],
    mipLevelCount: mips,
    sampleCount: samples,
    dimension: is3d ? "3d" : "2d",
  });
}

// A bind group from its entries: `numbers` holds (binding, kind, offset, size)
// for each entry, `resources` the objects bound. Kind 0 binds a whole buffer,
// 1 a range of one, 2 a sampler or a texture view as it is.
export function guard_create_bind_group(device, ptr, len, layout, numbers, resources) {
  const entries = new Array(resources.length);
  for (let i = 0; i < resources.length; i++) {
    const at = i * 4;
    const kind = numbers[at + 1];
    const object = resources[i];
    let resource;
    if (kind === 0) resource = { buffer: object };
    else if (kind === 1) resource = { buffer: object, offset: numbers[at + 2], size: numbers[at + 3] };
    else resource = object;
    entries[i] = { binding: numbers[at], resource };
  }
  return device.createBindGroup({ label: guard_text(ptr, len), layout, entries });
}

export function guard_create_sampler(device, ptr, len, u, v, w, mag, min, mip, lodMin, lodMax, compare, anisotropy) {
  const descriptor = {
    label: guard_text(ptr, len),
    addressModeU: u,
    addressModeV: v,
    addressModeW: w,
    magFilter: mag,
    minFilter: min,
    mipmapFilter: mip,
    lodMinClamp: lodMin,
    lodMaxClamp: lodMax,
    maxAnisotropy: anisotropy,
  };
  if (compare !== undefined) descriptor.compare = compare;
  return device.createSampler(descriptor);
}
