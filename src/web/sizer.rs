//! Follows a canvas's displayed size: a `ResizeObserver` (disconnected on
//! `Drop`) whose last observation, with the page's device pixel ratio, gives
//! the drawing buffer the canvas needs ([`crate::canvas_size`]).

use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::canvas_size::{drawing_buffer_size, ObservedSize};

#[wasm_bindgen(module = "/src/web/sizer.js")]
extern "C" {
    fn observe_size(canvas: &HtmlCanvasElement) -> JsValue;
    fn observed_size(sizer: &JsValue) -> Option<Vec<f64>>;
    fn refresh_size(sizer: &JsValue, canvas: &HtmlCanvasElement);
    fn stop_observing(sizer: &JsValue);
}

/// Observes one canvas; stops on `Drop`.
pub struct CanvasSizer {
    sizer: JsValue,
    canvas: HtmlCanvasElement,
}

impl std::fmt::Debug for CanvasSizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CanvasSizer").finish_non_exhaustive()
    }
}

impl CanvasSizer {
    /// Starts observing `canvas`; `None` where the browser has no
    /// `ResizeObserver` (the canvas keeps the size it was given).
    pub fn observe(canvas: &HtmlCanvasElement) -> Option<Self> {
        let sizer = observe_size(canvas);
        (!sizer.is_null()).then(|| CanvasSizer {
            sizer,
            canvas: canvas.clone(),
        })
    }

    /// Reads the canvas's laid-out size now, ahead of the next observation (it
    /// forces a layout: for moments that cannot wait, as before a device is
    /// configured on the canvas).
    pub fn refresh(&self) {
        refresh_size(&self.sizer, &self.canvas);
    }

    /// The drawing buffer the canvas needs now, each side at most
    /// `max_dimension`; `None` before the first observation or while the canvas
    /// is not displayed.
    pub fn wanted(&self, max_dimension: u32) -> Option<(u32, u32)> {
        let seen = observed_size(&self.sizer)?;
        let [css_width, css_height, device_width, device_height, ratio] = seen[..] else {
            return None;
        };
        let device_pixels = (device_width >= 0.0 && device_height >= 0.0)
            .then_some((device_width as u32, device_height as u32));
        drawing_buffer_size(
            ObservedSize {
                css_width,
                css_height,
                device_pixels,
            },
            ratio,
            max_dimension,
        )
    }
}

impl Drop for CanvasSizer {
    fn drop(&mut self) {
        stop_observing(&self.sizer);
    }
}
