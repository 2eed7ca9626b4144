// An engine-quirks shim: makes Chromium's WebGPU behave as Safari's (WebKit)
// does where the library must not depend on an engine, so that the wasm tests
// can check it without a Mac.
//
// * Every GPUError the engine produces (a pop's resolved value, a trusted
//   `uncapturederror` event's error) has a generic message, the same for every
//   error of its class: "Validation failure.", "Out of memory.", "Internal
//   error.". Nothing in it names a label, a value or a call. Errors made by a
//   page (`new GPUValidationError(...)`, synthetic events) keep theirs, as in
//   WebKit.
// * GPUDevice has no `onuncapturederror` attribute (listeners only).
// * GPUAdapter has no `info`.
//
// Loaded by tests/web.rs (a `#[wasm_bindgen(module)]` import, evaluated before
// the wasm module is instantiated, so before any test). It installs itself only
// when the browser's user agent carries MARKER: scripts/test's shimmed stage
// gives Chromium that user agent through a copy of webdriver.json
// (WASM_BINDGEN_TEST_WEBDRIVER_JSON); every other run is untouched.

const MARKER = 'webgpu-guard-quirks/webkit';

let installed = false;

function generic(error) {
  if (typeof GPUValidationError === 'function' && error instanceof GPUValidationError) {
    return 'Validation failure.';
  }
  if (typeof GPUOutOfMemoryError === 'function' && error instanceof GPUOutOfMemoryError) {
    return 'Out of memory.';
  }
  return 'Internal error.';
}

// Gives an engine-made error the generic message of its class (an own property
// that shadows the prototype's getter).
function genericize(error) {
  if (error !== null && typeof error === 'object' && error instanceof GPUError) {
    Object.defineProperty(error, 'message', {
      value: generic(error),
      configurable: true,
      enumerable: false,
      writable: false,
    });
  }
  return error;
}

function install() {
  if (typeof GPUDevice !== 'function' || typeof GPUError !== 'function') return false;

  // (1) Pops: the resolved error reads generically; a rejection passes through.
  const popErrorScope = GPUDevice.prototype.popErrorScope;
  GPUDevice.prototype.popErrorScope = function () {
    return popErrorScope.call(this).then(genericize);
  };
  // (1) Uncaptured errors: the engine's events (trusted) read generically.
  if (typeof GPUUncapturedErrorEvent === 'function') {
    const descriptor = Object.getOwnPropertyDescriptor(GPUUncapturedErrorEvent.prototype, 'error');
    if (descriptor && descriptor.get) {
      const get = descriptor.get;
      Object.defineProperty(GPUUncapturedErrorEvent.prototype, 'error', {
        configurable: true,
        enumerable: descriptor.enumerable,
        get() {
          const error = get.call(this);
          return this.isTrusted ? genericize(error) : error;
        },
      });
    }
  }
  // (2) No `onuncapturederror` attribute.
  delete GPUDevice.prototype.onuncapturederror;
  // (3) No `adapter.info`.
  if (typeof GPUAdapter === 'function') delete GPUAdapter.prototype.info;

  return !('onuncapturederror' in GPUDevice.prototype)
    && (typeof GPUAdapter !== 'function' || !('info' in GPUAdapter.prototype));
}

if (typeof navigator === 'object' && String(navigator.userAgent).includes(MARKER)) {
  installed = install();
  if (!installed) throw new Error('webgpu-guard: the WebKit-quirks shim could not install itself');
}

// Whether the shim is installed on this page.
export function webkit_quirks_installed() {
  return installed;
}

// Whether this page asked for the shim (its user agent carries the marker).
export function webkit_quirks_requested() {
  return typeof navigator === 'object' && String(navigator.userAgent).includes(MARKER);
}
