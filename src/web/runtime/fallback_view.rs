//! The fallback a page shows by default, when the application set no
//! [`super::Runtime::on_fallback`] hook: the message, readable, in place of the
//! canvas (hidden meanwhile). Removed, and the canvas shown again, on `Drop`
//! (the runtime drops it when it starts again).

use wasm_bindgen::JsCast;
use web_sys::{HtmlCanvasElement, HtmlElement};

use crate::supervisor::Fallback;

/// The class of the element, for a page's own style sheet.
pub const FALLBACK_CLASS: &str = "webgpu-guard-fallback";

/// The shown fallback; see the module's documentation.
pub(crate) struct FallbackView {
    element: HtmlElement,
    canvas: HtmlCanvasElement,
    /// The canvas's inline `display` before it was hidden.
    display: String,
}

impl FallbackView {
    /// Shows `fallback` in place of `canvas`; `None` where the page cannot
    /// (the canvas is not in a document).
    pub(crate) fn show(canvas: &HtmlCanvasElement, fallback: &Fallback) -> Option<Self> {
        let parent = canvas.parent_node()?;
        let document = canvas.owner_document()?;
        let element: HtmlElement = document.create_element("div").ok()?.dyn_into().ok()?;
        element.set_class_name(FALLBACK_CLASS);
        let _ = element.set_attribute("role", "alert");
        element.set_text_content(Some(&fallback.message()));
        let style = element.style();
        for (name, value) in [
            ("box-sizing", "border-box"),
            ("max-width", "40em"),
            ("margin", "1em auto"),
            ("padding", "1em 1.25em"),
            ("font", "16px/1.5 system-ui, sans-serif"),
            ("color", "#1a1a1a"),
            ("background", "#fff8e1"),
            ("border", "1px solid #e0b000"),
            ("border-radius", "6px"),
        ] {
            let _ = style.set_property(name, value);
        }
        let canvas_style = canvas.style();
        let display = canvas_style
            .get_property_value("display")
            .unwrap_or_default();
        parent
            .insert_before(&element, canvas.next_sibling().as_ref())
            .ok()?;
        let _ = canvas_style.set_property("display", "none");
        Some(FallbackView {
            element,
            canvas: canvas.clone(),
            display,
        })
    }
}

impl Drop for FallbackView {
    fn drop(&mut self) {
        self.element.remove();
        let style = self.canvas.style();
        let _ = if self.display.is_empty() {
            style.remove_property("display").map(|_| ())
        } else {
            style.set_property("display", &self.display)
        };
    }
}
