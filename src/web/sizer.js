// The JavaScript half of src/web/sizer.rs: a ResizeObserver on a canvas that
// keeps the last content box seen, in CSS pixels and, where the engine reports
// it (`devicePixelContentBoxSize`), in device pixels.

// Starts observing; null where the browser has no ResizeObserver.
export function observe_size(canvas) {
  if (typeof ResizeObserver === 'undefined') return null;
  const sizer = { css: null, device: null, observer: null };
  // Until the first observation (after the next layout), the size laid out
  // now: a device built before it sees the right size.
  if (canvas.isConnected && canvas.clientWidth > 0 && canvas.clientHeight > 0) {
    sizer.css = [canvas.clientWidth, canvas.clientHeight];
  }
  sizer.observer = new ResizeObserver((entries) => {
    for (const entry of entries) {
      const box = entry.contentBoxSize && entry.contentBoxSize[0];
      sizer.css = box
        ? [box.inlineSize, box.blockSize]
        : [entry.contentRect.width, entry.contentRect.height];
      const device = entry.devicePixelContentBoxSize && entry.devicePixelContentBoxSize[0];
      sizer.device = device ? [device.inlineSize, device.blockSize] : null;
    }
  });
  // Engines without the device-pixel box refuse the option (a TypeError):
  // the CSS box, times devicePixelRatio, stands in.
  try {
    sizer.observer.observe(canvas, { box: 'device-pixel-content-box' });
  } catch (e) {
    sizer.observer.observe(canvas);
  }
  return sizer;
}

// [css width, css height, device width, device height, devicePixelRatio]
// (device sides -1 when unknown), or null before the first observation.
export function observed_size(sizer) {
  if (sizer.css === null) return null;
  const ratio = typeof devicePixelRatio === 'number' ? devicePixelRatio : 1;
  const device = sizer.device === null ? [-1, -1] : sizer.device;
  return [sizer.css[0], sizer.css[1], device[0], device[1], ratio];
}

// Reads the size laid out now (a layout, for the rare moments that cannot wait
// for the next observation: before a device is configured). The device-pixel
// size is kept only while the CSS size is the one it was observed with.
export function refresh_size(sizer, canvas) {
  if (!canvas.isConnected || canvas.clientWidth <= 0 || canvas.clientHeight <= 0) return;
  const css = [canvas.clientWidth, canvas.clientHeight];
  const same = sizer.css !== null
    && Math.round(sizer.css[0]) === css[0] && Math.round(sizer.css[1]) === css[1];
  if (!same) {
    sizer.css = css;
    sizer.device = null;
  }
}

export function stop_observing(sizer) {
  sizer.observer.disconnect();
}
