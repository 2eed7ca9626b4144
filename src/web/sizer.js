// The JavaScript half of src/web/sizer.rs: a ResizeObserver on a canvas that
// keeps the last content box seen, in CSS pixels and, where the engine reports
// it (`devicePixelContentBoxSize`), in device pixels.

// Starts observing; null where the browser has no ResizeObserver.
export function observe_size(canvas) {
  if (typeof ResizeObserver === 'undefined') return null;
  const sizer = {
    css: null, device: null, observer: null, pinned: false,
    // A side suspected of being let go by its CSS, and a side pinned after it
    // was (see pin_sides_css_let_go).
    suspects: [null, null], late_pins: [null, null], on_window_resize: null,
  };
  // Judged once the canvas is laid out: now, or (hidden, or not yet in the
  // document) at the first observation that finds it displayed.
  sizer.pinned = pin_intrinsic_size(canvas, true);
  // Until the first observation (after the next layout), the size laid out
  // now: a device built before it sees the right size.
  sizer.css = content_box(canvas);
  sizer.observer = new ResizeObserver((entries) => {
    for (const entry of entries) {
      if (!sizer.pinned) sizer.pinned = pin_intrinsic_size(canvas, false);
      const box = entry.contentBoxSize && entry.contentBoxSize[0];
      const css = box
        ? [box.inlineSize, box.blockSize]
        : [entry.contentRect.width, entry.contentRect.height];
      const device = entry.devicePixelContentBoxSize && entry.devicePixelContentBoxSize[0];
      const pinned = sizer.pinned && pin_sides_css_let_go(sizer, canvas, css);
      sizer.css = css;
      // A side pinned now: its device-pixel size comes with the next observation.
      sizer.device = device && !pinned ? [device.inlineSize, device.blockSize] : null;
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
  const css = content_box(canvas);
  if (css === null) return;
  const same = sizer.css !== null
    && Math.abs(sizer.css[0] - css[0]) < 0.01 && Math.abs(sizer.css[1] - css[1]) < 0.01;
  if (!same) {
    sizer.css = css;
    sizer.device = null;
  }
}

// The content box laid out now, in CSS pixels (fractional, as the observer
// reports it), or null while the canvas is not displayed.
function content_box(canvas) {
  if (!canvas.isConnected || typeof getComputedStyle !== 'function') return null;
  const style = getComputedStyle(canvas);
  let width = parseFloat(style.width);
  let height = parseFloat(style.height);
  if (style.boxSizing === 'border-box') {
    const px = (name) => parseFloat(style[name]) || 0;
    width -= px('paddingLeft') + px('paddingRight') + px('borderLeftWidth') + px('borderRightWidth');
    height -= px('paddingTop') + px('paddingBottom') + px('borderTopWidth') + px('borderBottomWidth');
  }
  if (!(width > 0) || !(height > 0)) return null;
  return [width, height];
}

// A canvas that CSS does not size is laid out at its drawing buffer's size:
// following its displayed size would then grow it without end (at a ratio of 2,
// 480 CSS px want a 960 px buffer, which is laid out at 960 CSS px...). Such a
// side is pinned at the size it is laid out at now, in its inline style.
// Returns whether the canvas could be judged (false while it is not laid out:
// hidden, or not in the document). With `probe`, a side is judged by changing
// the canvas's size and seeing whether its layout follows; that clears a
// configured WebGPU canvas, so only before a device can have configured it (at
// the start). Later (a canvas shown after it started hidden), a side is taken
// for unsized when it is laid out at exactly its attribute's size.
function pin_intrinsic_size(canvas, probe) {
  if (!canvas.isConnected || typeof getComputedStyle !== 'function') return false;
  const before = content_box(canvas);
  if (before === null) return false;
  const width = canvas.width;
  const height = canvas.height;
  let grown;
  if (probe) {
    canvas.width = width * 2 + 1;
    canvas.height = height * 2 + 1;
    grown = content_box(canvas);
    canvas.width = width;
    canvas.height = height;
  } else {
    // A side laid out at its attribute's size "grows" with it.
    grown = [
      Math.abs(before[0] - width) < 0.01 ? before[0] + 1 : before[0],
      Math.abs(before[1] - height) < 0.01 ? before[1] + 1 : before[1],
    ];
  }
  if (grown === null) return false;
  // Under `box-sizing: border-box` the inline size is the border box's: the
  // padding and border go on top of the content box kept.
  const extra = border_box_extra(canvas);
  if (Math.abs(grown[0] - before[0]) > 0.01) canvas.style.width = (before[0] + extra[0]) + 'px';
  if (Math.abs(grown[1] - before[1]) > 0.01) canvas.style.height = (before[1] + extra[1]) + 'px';
  return true;
}

// The sizing CSS of a canvas judged sized may stop applying later (a class
// removed, a media query no longer matching, an inline size set to auto): it
// is then laid out at its attributes' size, and following it grows the canvas
// without end at any ratio but 1, unless a maximum size stops it: a maximum
// on either side (`max-width: 100%`) bounds both, since a side that is not
// sized by CSS follows the other through the canvas's aspect ratio. So a side
// seen laid out at exactly its attribute's size, on a canvas with no maximum
// size, is suspected, with the size it had before. It is pinned at
// that size (`css` takes it) when the layout follows the attribute once more
// within three frames of the runtime resizing the buffer; otherwise the
// suspicion lapses: a CSS size that merely equals the attribute's for a moment
// stays CSS's. A pin made here is judged again when the window is resized (a
// media query may apply again). Returns whether a side was pinned.
function pin_sides_css_let_go(sizer, canvas, css) {
  const ratio = typeof devicePixelRatio === 'number' ? devicePixelRatio : 1;
  if (Math.abs(ratio - 1) < 0.01 || sizer.css === null) return false;
  const attributes = [canvas.width, canvas.height];
  const bounded = has_maximum_size(canvas);
  let pinned = false;
  for (let side = 0; side < 2; side++) {
    const suspect = sizer.suspects[side];
    if (bounded || Math.abs(css[side] - attributes[side]) >= 0.01) {
      sizer.suspects[side] = null;
    } else if (suspect === null) {
      if (Math.abs(sizer.css[side] - css[side]) > 0.01) {
        const made = { size: sizer.css[side], attribute: attributes[side] };
        sizer.suspects[side] = made;
        lapse_when_the_buffer_moved(sizer, canvas, side, made);
      }
    } else if (suspect.attribute !== attributes[side]) {
      // Written at the next frame: a size changed inside the observer's
      // callback is an error the page sees ("ResizeObserver loop completed
      // with undelivered notifications"). Until then `css` holds it.
      const size = suspect.size;
      after_frames(1, () => pin_late(sizer, canvas, side, size));
      css[side] = size;
      sizer.suspects[side] = null;
      pinned = true;
    }
  }
  return pinned;
}

const SIDES = [['width', 'maxWidth'], ['height', 'maxHeight']];

// Whether either side has a maximum size (which bounds both).
function has_maximum_size(canvas) {
  const style = getComputedStyle(canvas);
  return SIDES.some(([, max]) => style[max] !== 'none' && style[max] !== '');
}

// A suspicion lapses three frames after the runtime changed the buffer's side
// (a layout that followed would have been seen by then), or after about ten
// seconds of frames without a change (a runtime stopped or waiting).
function lapse_when_the_buffer_moved(sizer, canvas, side, made) {
  let waited = 0;
  const watch = () => {
    if (sizer.suspects[side] !== made) return;
    const attribute = side === 0 ? canvas.width : canvas.height;
    if (attribute !== made.attribute || ++waited > 600) {
      after_frames(3, () => {
        if (sizer.suspects[side] === made) sizer.suspects[side] = null;
      });
      return;
    }
    after_frames(1, watch);
  };
  after_frames(1, watch);
}

// Pins `side` at `size` CSS pixels in the inline style, keeping the inline
// value it replaces to put back when the pin is judged again.
function pin_late(sizer, canvas, side, size) {
  const property = SIDES[side][0];
  const pin = (size + border_box_extra(canvas)[side]) + 'px';
  const pinned = sizer.late_pins[side];
  sizer.late_pins[side] = { before: pinned ? pinned.before : canvas.style[property], value: pin, size };
  canvas.style[property] = pin;
  if (!sizer.on_window_resize && typeof addEventListener === 'function') {
    sizer.on_window_resize = () => judge_late_pins_again(sizer, canvas);
    addEventListener('resize', sizer.on_window_resize);
  }
}

// The window was resized: the late pins come off (the inline values they
// replaced are put back) and the canvas is laid out again, at once; they stay
// off where CSS sizes it now, and go back on where it is still laid out at
// its attributes' size. Nothing is painted in between.
function judge_late_pins_again(sizer, canvas) {
  const ratio = typeof devicePixelRatio === 'number' ? devicePixelRatio : 1;
  const taken = [];
  for (let side = 0; side < 2; side++) {
    const pinned = sizer.late_pins[side];
    if (!pinned) continue;
    const property = SIDES[side][0];
    if (canvas.style[property] !== pinned.value) {
      // The page set the side itself meanwhile: its word stands.
      sizer.late_pins[side] = null;
      continue;
    }
    canvas.style[property] = pinned.before;
    taken.push(side);
  }
  if (taken.length === 0) return;
  const css = content_box(canvas);
  const attributes = [canvas.width, canvas.height];
  const free = css !== null && Math.abs(ratio - 1) >= 0.01 && !has_maximum_size(canvas);
  for (const side of taken) {
    if (free && Math.abs(css[side] - attributes[side]) < 0.01) {
      canvas.style[SIDES[side][0]] = sizer.late_pins[side].value;
    } else {
      sizer.late_pins[side] = null;
    }
  }
}

// Runs `then` after `frames` animation frames (at once where there are none,
// or none are asked for).
function after_frames(frames, then) {
  if (typeof requestAnimationFrame !== 'function' || frames <= 0) return then();
  requestAnimationFrame(() => after_frames(frames - 1, then));
}

// The padding and border a border-box size holds beside the content box, in
// CSS pixels ([0, 0] for a content-box canvas).
function border_box_extra(canvas) {
  const style = getComputedStyle(canvas);
  if (style.boxSizing !== 'border-box') return [0, 0];
  const px = (name) => parseFloat(style[name]) || 0;
  return [
    px('paddingLeft') + px('paddingRight') + px('borderLeftWidth') + px('borderRightWidth'),
    px('paddingTop') + px('paddingBottom') + px('borderTopWidth') + px('borderBottomWidth'),
  ];
}

export function stop_observing(sizer) {
  sizer.observer.disconnect();
  if (sizer.on_window_resize) removeEventListener('resize', sizer.on_window_resize);
  sizer.on_window_resize = null;
  sizer.suspects = [null, null];
}
