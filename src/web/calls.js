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
