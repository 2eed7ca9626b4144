//! A JavaScript exception as a fault (feature `js`, off by default): what lets
//! `?` turn a web-sys call's `Err(JsValue)` into a [`Fault`]. The rule (a
//! trait of std's, a type of wasm-bindgen's) lets only this crate write the
//! conversion; the text of the value is the front's to make, since reading a
//! thrown value safely needs JavaScript (a revoked `Proxy` throws at every
//! look): the web front installs its describer with [`set_describer`], and
//! until it does a value reads as its string, or as what it is not.

use std::sync::OnceLock;

use wasm_bindgen::JsValue;

use crate::fault::{Fault, FaultKind};

/// How a front reads a thrown value.
pub type Describer = fn(&JsValue) -> String;

static DESCRIBER: OnceLock<Describer> = OnceLock::new();

/// Installs the front's describer (once; later calls change nothing).
pub fn set_describer(describe: Describer) {
    let _ = DESCRIBER.set(describe);
}

/// The text of a thrown value, by the front's describer.
pub fn describe(value: &JsValue) -> String {
    match DESCRIBER.get() {
        Some(describe) => describe(value),
        None => value
            .as_string()
            .unwrap_or_else(|| "a JavaScript exception (not a string)".into()),
    }
}

impl From<JsValue> for Fault {
    /// A JavaScript exception becomes a [`FaultKind::Exception`] fault.
    fn from(value: JsValue) -> Self {
        Fault::new(FaultKind::Exception, describe(&value))
    }
}
