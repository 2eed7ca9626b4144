// The JavaScript half of src/web/scope.rs.
let NAMES = [];
export function guard_set_filters(names) { NAMES = names; }
export function guard_push(device, mask) {
  let pushed = 0;
  for (let i = 0; i < NAMES.length; i++) {
    if (mask & (1 << i)) {
      try { device.pushErrorScope(NAMES[i]); } catch (e) { break; }
      pushed |= 1 << i;
    }
  }
  return pushed;
}
// The liveness probe: a sampler no engine accepts (a negative lodMinClamp),
// provoked in a validation scope of its own, pushed just for it and popped
// right after it: that pop resolves to the probe's error on a live device and
// to null on a lost one. The error's text is never read (engines word it
// differently; WebKit's is "Validation failure." for every error), and no
// other scope ever sees it: pushed last, the probe's scope is the nearest
// validation scope whatever else is open.
const PROBE = { label: 'webgpu-guard liveness probe', lodMinClamp: -31337 };
const ignore = () => {};
// Pushes the probe's scope, provokes its error and pops it. Returns the pop, or
// null when the push, the call or the pop threw (it would prove nothing).
function probe_pop(device) {
  try { device.pushErrorScope('validation'); } catch (e) { return null; }
  let threw = false;
  try { device.createSampler(PROBE); } catch (e) { threw = true; }
  let pop;
  try { pop = device.popErrorScope(); } catch (e) { return null; }
  if (threw) { pop.then(ignore, ignore); return null; }
  return pop;
}
// Pops the scopes of `mask` in reverse order. With `probe`, the liveness probe
// follows them in its own scope (`probe_pop`), its pop kept apart as the
// array's `probe`: issued after the set's pops, it is answered after them.
export function guard_pop(device, mask, probe) {
  const pops = [];
  for (let i = NAMES.length - 1; i >= 0; i--) {
    if (mask & (1 << i)) {
      let p;
      try { p = device.popErrorScope(); } catch (e) { p = Promise.reject(e); }
      pops.push(p);
    }
  }
  pops.reverse();
  if (probe) {
    const p = probe_pop(device);
    if (p !== null) pops.probe = p;
  }
  return pops;
}
// A probe issued on its own, resolved to whether the device is alive now. A
// push or a call that throws proves nothing (false).
function guard_probe(device) {
  const pop = probe_pop(device);
  if (pop === null) return Promise.resolve(false);
  return pop.then((e) => e !== null && e !== undefined, () => false);
}
// Settles every pop of `batches` together. `probeDevice`: the device's
// liveness is wanted. `folded`: the batch popped last of all, whose own probe
// (if it carries one) vouches for every pop; without it, a separate probe is
// issued after every pop. Probes are never among the pops handed back.
// Resolves to `alive` (a boolean) when no pop caught an error or rejected,
// else to [alive, then (index, fulfilled, value) for each that did]. One
// reaction per pop.
export function guard_settle(batches, probeDevice, folded) {
  const promises = [];
  for (let b = 0; b < batches.length; b++) {
    const batch = batches[b];
    for (let i = 0; i < batch.length; i++) promises.push(batch[i]);
  }
  const count = promises.length;
  let carried = false;
  for (let b = 0; b < batches.length; b++) {
    const probe = batches[b].probe;
    if (probe === undefined) continue;
    if (b === folded && probeDevice) {
      promises.push(probe);
      carried = true;
    } else {
      // Not read: observed all the same, never an unhandled rejection.
      probe.then(ignore, ignore);
    }
  }
  const separate = !!probeDevice && !carried;
  if (separate) promises.push(guard_probe(probeDevice));
  return new Promise((resolve) => {
    const fulfilled = new Array(promises.length);
    const values = new Array(promises.length);
    let left = promises.length;
    const done = () => {
      let alive = false;
      if (separate) alive = values[count] === true;
      else if (carried) {
        alive = fulfilled[count] === true && values[count] !== null && values[count] !== undefined;
      }
      let out = null;
      for (let i = 0; i < count; i++) {
        const ok = fulfilled[i];
        const value = values[i];
        const caught = ok && value !== null && value !== undefined;
        if (!ok || caught) {
          if (out === null) out = [false];
          out.push(i, ok, value);
        }
      }
      const finish = (alive) => {
        if (out === null) resolve(alive);
        else { out[0] = alive; resolve(out); }
      };
      // A carried probe that reads null or rejects does not judge the device
      // lost on its own: a second probe, issued now, decides (a device alive
      // now was alive then); only the loss path pays it.
      if (carried && !alive) guard_probe(probeDevice).then(finish);
      else finish(alive);
    };
    if (left === 0) { done(); return; }
    for (let i = 0; i < promises.length; i++) {
      promises[i].then(
        (value) => { fulfilled[i] = true; values[i] = value; if (--left === 0) done(); },
        (reason) => { fulfilled[i] = false; values[i] = reason; if (--left === 0) done(); },
      );
    }
  });
}
// A pop that rejects is a misused stack only on a live device: on a device
// that is gone (a GPU-process crash: Dawn rejects with "Instance dropped in
// popErrorScope") it is the loss, which the loss watcher reports. So a
// rejection is said only once a probe, issued after it, finds the device alive;
// the rejections of one frame's set wait for one probe.
export function guard_pop_report(device, mask, tag, report) {
  let alive = null;
  const when_alive = () => (alive = alive || guard_probe(device));
  for (const p of guard_pop(device, mask, false)) {
    p.then(
      (e) => { if (e) report(tag, e, ''); },
      (r) => when_alive().then((live) => { if (live) report(tag, null, String(r)); }, ignore),
    );
  }
}
