//! The fallback a page shows by default, when the application set no
//! [`super::Runtime::on_fallback`] hook: the message, readable, in place of the
//! canvas (hidden meanwhile). Removed, and the canvas shown again, on `Drop`
//! (the runtime drops it when it starts again).

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use web_sys::{HtmlCanvasElement, HtmlElement};

use crate::held::Held;
use crate::supervisor::Fallback;

/// The class of the element, for a page's own style sheet.
pub const FALLBACK_CLASS: &str = "webgpu-guard-fallback";

/// The shown fallback; see the module's documentation.
#[derive(Debug)]
pub struct FallbackView {
    element: HtmlElement,
    canvas: HtmlCanvasElement,
    /// The canvas's inline `display` before it was hidden.
    display: String,
}

impl FallbackView {
    /// Shows `fallback` in place of `canvas`; `None` where the page cannot
    /// (the canvas is not in a document).
    pub fn show(canvas: &HtmlCanvasElement, fallback: &Fallback) -> Option<Self> {
        let parent = canvas.parent_node()?;
        let document = canvas.owner_document()?;
        let element: HtmlElement = document.create_element("div").ok()?.dyn_into().ok()?;
        element.set_class_name(FALLBACK_CLASS);
        let _ = element.set_attribute("role", "alert");
        // The first line as prose; the rest (a shader diagnostic's source
        // line and caret) as it is, in a monospaced block, so that the caret
        // stands under its column.
        let message = fallback.message();
        let (first, rest) = message.split_once('\n').unwrap_or((&message, ""));
        element.set_text_content(Some(first));
        if !rest.is_empty() {
            let block: HtmlElement = document.create_element("pre").ok()?.dyn_into().ok()?;
            block.set_text_content(Some(rest));
            let style = block.style();
            for (name, value) in [
                ("white-space", "pre"),
                ("overflow-x", "auto"),
                ("margin", "0.5em 0 0"),
                (
                    "font",
                    "13px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace",
                ),
            ] {
                let _ = style.set_property(name, value);
            }
            let _ = element.append_child(&block);
        }
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

/// What the application gets when the fallback must be shown.
pub(super) type FallbackHook = Rc<dyn Fn(&Fallback)>;

/// How a runtime shows its fallback: the application's hook, or the view.
#[derive(Default)]
pub(super) struct FallbackShow {
    hook: Held<Option<FallbackHook>>,
    view: Held<Option<FallbackView>>,
    /// Whether a crash's fallback was shown (once).
    crash_shown: Cell<bool>,
}

impl FallbackShow {
    pub(super) fn set_hook(&self, hook: FallbackHook) {
        self.hook.replace(Some(hook));
    }

    /// The view goes, and the canvas shows again.
    pub(super) fn remove_view(&self) {
        let shown = self.view.take();
        drop(shown);
    }

    /// Marks the crash's fallback shown; whether it was already.
    pub(super) fn crash_shown(&self) -> bool {
        self.crash_shown.replace(true)
    }

    /// Shows `fallback`: the view in place of `canvas` without a hook, or
    /// the hook, called with nothing of the runtime lent, through the
    /// trampoline (`Err` with what it threw).
    pub(super) fn show(
        &self,
        canvas: &HtmlCanvasElement,
        fallback: &Fallback,
    ) -> Result<(), wasm_bindgen::JsValue> {
        match self.hook.get().flatten() {
            Some(hook) => {
                // Dropped inside the trampoline too: a hook that replaced
                // itself holds the last reference, and its `Drop` is the
                // application's code.
                let mut hook = Some(hook);
                crate::web::crash::trampoline(&mut || {
                    if let Some(hook) = hook.take() {
                        hook(fallback);
                    }
                })
            }
            None => {
                self.remove_view();
                let view = FallbackView::show(canvas, fallback);
                self.view.replace(view);
                Ok(())
            }
        }
    }
}
