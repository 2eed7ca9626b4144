// The start-up workload of startup.rs written by hand in plain JavaScript, with
// no library: the same 240 resources, the same labels and the same scope
// strategies, so that the bench can say what the Rust layer itself costs.

const UNIFORM = 0x40;
const COPY_DST = 0x08;
const TEXTURE_BINDING = 0x04;
const COMPUTE = 0x4;
const RESOURCES = 240;
const PHASES = 8;
const FILTERS = ["validation", "out-of-memory", "internal"];

export function baselineKit(device) {
  const layout = device.createBindGroupLayout({
    label: "js-layout",
    entries: [{ binding: 0, visibility: COMPUTE, buffer: { type: "uniform" } }],
  });
  const pipelineLayout = device.createPipelineLayout({
    label: "js-pipeline-layout",
    bindGroupLayouts: [layout],
  });
  const module = device.createShaderModule({
    label: "js-compute",
    code: "@group(0) @binding(0) var<uniform> u: vec4f;\n@compute @workgroup_size(1) fn main() { _ = u; }\n",
  });
  return { layout, pipelineLayout, module };
}

function create(device, kit, i, buffers) {
  if (i < 100) {
    const b = device.createBuffer({ label: `b${i}`, size: 256, usage: UNIFORM | COPY_DST });
    buffers.push(b);
    return b;
  }
  if (i < 160) {
    return device.createTexture({
      label: `t${i}`,
      size: [64, 64, 1],
      format: "rgba8unorm",
      usage: TEXTURE_BINDING,
    });
  }
  if (i < 180) return device.createSampler({ label: `s${i}` });
  if (i < 220) {
    return device.createBindGroup({
      label: `g${i}`,
      layout: kit.layout,
      entries: [{ binding: 0, resource: { buffer: buffers[i - 180] } }],
    });
  }
  return device.createComputePipeline({
    label: `p${i}`,
    layout: kit.pipelineLayout,
    compute: { module: kit.module, entryPoint: "main" },
  });
}

// Resolves when the GPU process has answered everything issued before (an
// empty scope's pop: onSubmittedWorkDone would also wait for a queue that
// Firefox polls every 100 ms).
function roundTrip(device) {
  device.pushErrorScope("validation");
  return device.popErrorScope();
}

// The library's liveness probe written by hand: a deliberately invalid sampler
// created inside the validation scope popped last, just before that pop. The
// pop comes back with an error only if the device was alive when the pops were
// answered (a lost device's pops resolve to null, like clean ones); the probe's
// own error is told from a real one by its value.
function probe(device) {
  device.createSampler({ label: "webgpu-guard liveness probe", lodMinClamp: -31337 });
}

function isProbe(error) {
  const message = error.message.toLowerCase();
  return message.includes("-31337") && message.includes("lod");
}

// The first real error of a batch's pops; with `probed`, the last pop is the
// validation scope that holds the probe, and a null there means a lost device.
function firstError(results, probed) {
  if (probed) {
    const last = results[results.length - 1];
    if (!last) throw new Error("the device was lost");
    if (isProbe(last)) results = results.slice(0, -1);
  }
  for (const error of results) if (error) return error;
  return null;
}

// Milliseconds until every resource is known good (or, without scopes, until
// the GPU process has taken the work), as startup::measure counts them.
// `probed`: the scoped strategies also pay the library's liveness probe, once per
// awaited batch, so that the same guarantee is compared.
export async function baselineMeasure(device, kit, strategy, probed) {
  const kept = [];
  const buffers = [];
  const perPhase = RESOURCES / PHASES;
  const start = performance.now();
  if (strategy === "none") {
    for (let i = 0; i < RESOURCES; i++) kept.push(create(device, kit, i, buffers));
  } else if (strategy === "phases" || strategy === "attributed") {
    // attributed: phase scopes plus a label -> creation table, the hand-written
    // form of what the library records for each creation.
    const sites = strategy === "attributed" ? new Map() : null;
    for (let phase = 0; phase < PHASES; phase++) {
      for (const filter of FILTERS) device.pushErrorScope(filter);
      for (let i = phase * perPhase; i < (phase + 1) * perPhase; i++) {
        const made = create(device, kit, i, buffers);
        if (sites) sites.set(made.label, i);
        kept.push(made);
      }
      if (probed) probe(device);
      // Popped in reverse: the last pop is the validation scope's.
      const pops = [device.popErrorScope(), device.popErrorScope(), device.popErrorScope()];
      const error = firstError(await Promise.all(pops), probed);
      if (error) throw new Error(`phase-${phase}: ${error.message}`);
    }
  } else if (strategy === "per-resource-awaited") {
    for (let i = 0; i < RESOURCES; i++) {
      device.pushErrorScope("validation");
      const made = create(device, kit, i, buffers);
      if (probed) probe(device);
      const error = firstError([await device.popErrorScope()], probed);
      if (error) throw new Error(`resource ${i}: ${error.message}`);
      kept.push(made);
    }
  } else if (strategy === "per-call") {
    for (let phase = 0; phase < PHASES; phase++) {
      const pops = [];
      for (let i = phase * perPhase; i < (phase + 1) * perPhase; i++) {
        for (const filter of FILTERS) device.pushErrorScope(filter);
        kept.push(create(device, kit, i, buffers));
        if (probed && i === (phase + 1) * perPhase - 1) probe(device);
        pops.push(device.popErrorScope(), device.popErrorScope(), device.popErrorScope());
      }
      const error = firstError(await Promise.all(pops), probed);
      if (error) throw new Error(`phase-${phase}: ${error.message}`);
    }
  } else {
    throw new Error(`unknown strategy ${strategy}`);
  }
  await roundTrip(device);
  const elapsed = performance.now() - start;
  for (const made of kept) if (made.destroy) made.destroy();
  await roundTrip(device);
  return elapsed;
}

// Dispatches `n` synthetic uncaptured validation errors (distinct messages, in
// Dawn's wording) on `device`; returns the milliseconds it took. The same
// events with no listener, with a bare hand-written listener and with the
// library's net tell what the fault sink costs per error.
export function dispatchErrors(device, n) {
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const offset = 4 * i + 1;
    const error = new GPUValidationError(
      `Offset (${offset}) is not a multiple of 4.\n - While calling [Queue].WriteBuffer([Buffer "storm-target"], ${offset}, data, 4)`,
    );
    device.dispatchEvent(new GPUUncapturedErrorEvent("uncapturederror", { error }));
  }
  return performance.now() - start;
}

// The least a hand-written net does: prevent the default and count by class.
export function bareListener(device) {
  const counts = [0, 0, 0];
  device.addEventListener("uncapturederror", (event) => {
    event.preventDefault();
    const error = event.error;
    counts[error instanceof GPUValidationError ? 0 : error instanceof GPUOutOfMemoryError ? 1 : 2]++;
  });
  return counts;
}


// The floor under any awaited strategy: `n` empty scopes, each popped and
// awaited before the next push, with no resource and no library.
export async function baselineRoundTrips(device, n) {
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    device.pushErrorScope("validation");
    await device.popErrorScope();
  }
  return performance.now() - start;
}
