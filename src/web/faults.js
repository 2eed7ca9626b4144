// The JavaScript half of src/web/faults.rs (the uncaptured-error listener).
export function uncaptured_hooks(handler, orphans) {
  const kindOf = (error) => {
    if (typeof GPUValidationError !== 'undefined' && error instanceof GPUValidationError) return 1;
    if (typeof GPUOutOfMemoryError !== 'undefined' && error instanceof GPUOutOfMemoryError) return 2;
    if (typeof GPUError !== 'undefined' && error instanceof GPUError) return 3;
    return 0;
  };
  // Rust's char::is_whitespace, on UTF-16 code units (all of it is in the BMP).
  const isSpace = (c) => (c >= 9 && c <= 13) || c === 32 || c === 0x85 || c === 0xa0
    || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029
    || c === 0x202f || c === 0x205f || c === 0x3000;
  // The first label of Dawn's `[Kind "label"]` objects whose kind `wanted`
  // takes, as webgpu_guard::fault's dawn_objects reads them (kind and label
  // trimmed, the label's quotes off); '' when there is none.
  const dawnObject = (m, wanted) => {
    let from = 0;
    for (;;) {
      const open = m.indexOf('[', from);
      if (open < 0) return '';
      const close = m.indexOf(']', open + 1);
      if (close < 0) return '';
      from = close + 1;
      const quote = m.indexOf('"', open + 1);
      if (quote < 0 || quote > close) continue;
      let kindStart = open + 1;
      let kindEnd = quote;
      while (kindStart < kindEnd && isSpace(m.charCodeAt(kindStart))) kindStart++;
      while (kindEnd > kindStart && isSpace(m.charCodeAt(kindEnd - 1))) kindEnd--;
      if (!wanted(m.slice(kindStart, kindEnd))) continue;
      let start = quote;
      let end = close;
      while (end > start && isSpace(m.charCodeAt(end - 1))) end--;
      while (start < end && m.charCodeAt(start) === 34) start++;
      while (end > start && m.charCodeAt(end - 1) === 34) end--;
      if (start < end) return m.slice(start, end);
    }
  };
  // Dawn's first object but the device and the queue (dawn_label).
  const dawnLabel = (m) => dawnObject(m, (kind) => kind !== 'Device' && kind !== 'Queue');
  // Dawn's first labelled `[XDescriptor ""label""]`: the object being created.
  const descriptorLabel = (m) => dawnObject(m, (kind) => kind.endsWith('Descriptor'));
  // The label a message blames, as webgpu_guard::fault::label_in_message
  // finds it: the object being created; none where a creation names only its
  // arguments; else Dawn's first object (wgpu's messages do not say which
  // object failed).
  const labelOf = (m) => {
    const created = descriptorLabel(m);
    if (created) return created;
    if (m.includes('].Create') || m.includes('Device::create_')) return '';
    return dawnLabel(m);
  };
  // Without a clock nothing is ever held: every error goes to the log.
  const performance = globalThis.performance;
  const now = performance === undefined ? () => Infinity : () => performance.now();
  let silentUntil = 0;
  // Held groups by kind and label: [kind, first message, label, count, last message, key].
  let held = null;
  let last = null;
  let timer = 0;
  // Once closed, the handler may be gone: nothing calls it, and whatever is
  // still held goes to `orphans` ([kind, first message, count] after one
  // another; count 0 for a live error, written as such), which the fault sink
  // reads at its next chance.
  let closed = false;
  // Hands one held group to the log. A negative answer: the log was busy (a
  // drain from inside its own work, a listener removed from inside it); the
  // group is kept for the next drain, or put in `orphans` once closed.
  const give = (group) => {
    if (!closed && handler(group[0], group[1], group[3]) >= 0) return;
    if (closed) { orphans.push(group[0], group[1], group[3]); return; }
    if (held === null) {
      held = new Map();
      timer = setTimeout(drain, 100);
    }
    // Errors of its group that arrived meanwhile (during the handler's call)
    // are counted with it, in the group the listener now counts in.
    const newer = held.get(group[5]);
    if (newer === undefined) held.set(group[5], group);
    else { newer[1] = group[1]; newer[3] += group[3]; }
  };
  const drain = () => {
    if (timer !== 0) { clearTimeout(timer); timer = 0; }
    if (held === null) return;
    const groups = held;
    held = null;
    last = null;
    for (const group of groups.values()) give(group);
  };
  const listener = (event) => {
    event.preventDefault();
    const error = event.error;
    const kind = kindOf(error);
    if (closed) {
      if (kind !== 0) orphans.push(kind, String(error.message), 0);
      return;
    }
    if (kind === 0) { handler(0, '', 0); return; }
    const message = String(error.message);
    if (silentUntil !== 0) {
      // The clock the limiter reads (an event's timeStamp is its creation, which
      // may be earlier than its dispatch).
      if (now() < silentUntil) {
        // The same message again (a bad call repeated every frame): same group.
        if (last !== null && last[0] === kind && last[4] === message) {
          last[3] += 1;
          return;
        }
        const label = labelOf(message);
        // A storm hits one group again and again.
        if (last !== null && last[0] === kind && last[2] === label) {
          last[3] += 1;
          last[4] = message;
          return;
        }
        if (held === null) {
          held = new Map();
          timer = setTimeout(drain, 100);
        }
        const key = kind + label;
        let group = held.get(key);
        if (group === undefined) {
          group = [kind, message, label, 0, message, key];
          held.set(key, group);
        }
        group[3] += 1;
        group[4] = message;
        last = group;
        return;
      }
    }
    drain();
    // Removed by what the drain ran (a sink or a sanitizer dropping it).
    if (closed) { orphans.push(kind, message, 0); return; }
    silentUntil = handler(kind, message, 0);
  };
  // The listener is being removed: what it holds goes in now; what the log
  // cannot take now (it is busy: a telemetry sink or a sanitizer removing the
  // listener) goes to `orphans`, and no timer is left to call a handler that is
  // about to go.
  const close = () => {
    drain();
    closed = true;
    if (timer !== 0) { clearTimeout(timer); timer = 0; }
    if (held !== null) {
      for (const group of held.values()) orphans.push(group[0], group[1], group[3]);
    }
    held = null;
    last = null;
  };
  return { listener, drain, close };
}
