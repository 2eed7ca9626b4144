//! Shortens the names a wasm-bindgen module imports from its own JavaScript
//! glue, and those of its exports the glue reads.
//!
//! wasm-bindgen names every function the glue gives the module after the
//! binding and a hash (`__wbg_createBuffer_0123456789abcdef`): some 35 bytes
//! each, the hash incompressible, a few hundred of them in an application on
//! web-sys. This crate renames them `a`, `b`, ... `ZZ`, then three letters, in
//! the wasm's import section and in the glue's import object alike, as
//! emscripten does, and mends the page's subresource-integrity hashes of both
//! files. The exports the glue reads as `wasm.name` (the allocator, each
//! closure's shim, a 60-byte name with its hash) are shortened the same way;
//! `memory` and any export the glue does not read keep their names. What
//! `init()` resolves to (and trunk's `TrunkApplicationStarted` event carries)
//! is the module's exports: a page's own JavaScript that reads a renamed one
//! there finds it under its short name; the glue's exports are unchanged.
//! Imports from other modules (a crate's JavaScript snippets) keep their
//! names: they are those modules' exports. Nothing is renamed unless every
//! name is found exactly once in the glue, as the key of a property.

mod folder;
mod glue;
mod integrity;
mod names;
mod wasm;

pub use folder::{minify_folder, Report};
pub use glue::{reads_export, rename_in_glue};
pub use integrity::Rehash;
pub use names::short_names;
pub use wasm::{rename, Renamed};

use std::fmt;

/// Why a build's files were left as they were.
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    /// The wasm could not be read: `what` at byte `offset`.
    Wasm { offset: usize, what: &'static str },
    /// An import's name is not one key of the glue's import object: it was
    /// found `found` times.
    Glue { name: String, found: usize },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Wasm { offset, what } => write!(f, "the wasm at byte {offset}: {what}"),
            Error::Glue { name, found } => write!(
                f,
                "the import {name} is found {found} times in the JavaScript glue, \
                 where it must be one property's key (a new wasm-bindgen?)"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// A module and its glue, their names shortened.
#[derive(Debug)]
pub struct Minified {
    /// The module.
    pub wasm: Vec<u8>,
    /// Its glue.
    pub js: String,
    /// How many imports were renamed.
    pub imports: usize,
    /// How many exports were renamed.
    pub exports: usize,
}

/// Shortens the names `wasm` imports from its glue `js` ([`is_glue_import`])
/// and those it exports that the glue reads (`wasm.name`), but `memory`, in
/// both files; nothing when an import is not where it should be in the glue.
pub fn minify(wasm: &[u8], js: &str) -> Result<Minified, Error> {
    let renamed = rename(wasm, is_glue_import, |name| {
        name != "memory" && reads_export(js, name)
    })?;
    let js = rename_in_glue(js, &renamed.imports, &renamed.exports)?;
    Ok(Minified {
        wasm: renamed.wasm,
        js,
        imports: renamed.imports.len(),
        exports: renamed.exports.len(),
    })
}

/// Whether `module` is the glue itself: `./name_bg.js` (wasm-bindgen 0.2.10x
/// and later) or `wbg` (before), never a snippet's path.
pub fn is_glue_module(module: &str) -> bool {
    module == "wbg"
        || (module.starts_with("./")
            && module.ends_with("_bg.js")
            && !module.starts_with("./snippets/"))
}

/// Whether the import `name` from `module` is one wasm-bindgen made for its
/// glue: from the glue itself, named `__wbg_...` or `__wbindgen_...`.
pub fn is_glue_import(module: &str, name: &str) -> bool {
    is_glue_module(module) && (name.starts_with("__wbg_") || name.starts_with("__wbindgen_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_glue_s_own_imports_are_its() {
        assert!(is_glue_import("./particles_bg.js", "__wbg_new_0123"));
        assert!(is_glue_import("wbg", "__wbindgen_cast_0001"));
        assert!(!is_glue_import("./particles_bg.js", "guard_push"));
        assert!(!is_glue_import(
            "./snippets/crate-01/src/x_bg.js",
            "__wbg_helper"
        ));
        assert!(!is_glue_import("env", "__wbg_new_0123"));
    }

    #[test]
    fn a_module_and_its_glue_are_renamed_together() {
        let wasm = crate::wasm::tests::with_exports(
            &[
                ("./app_bg.js", "__wbg_new_0123", &[0, 0]),
                ("./snippets/s/a.js", "guard_push", &[0, 0]),
                ("./app_bg.js", "__wbindgen_cast_77", &[0, 0]),
            ],
            &["memory", "__wbindgen_malloc", "main"],
        );
        let js = "const import0 = {\n    __wbg_new_0123: function() { return wasm.__wbindgen_malloc(4); },\n    \
                  __wbindgen_cast_77: function(a) { return a; },\n};\nwasm.memory.buffer;";
        let out = minify(&wasm, js).unwrap();
        assert_eq!((out.imports, out.exports), (2, 1));
        assert_eq!(
            out.js,
            "const import0 = {\n    a: function() { return wasm.a(4); },\n    \
             b: function(a) { return a; },\n};\nwasm.memory.buffer;"
        );
        // `main`, which the glue does not read, keeps its name.
        assert!(out.wasm.windows(5).any(|w| w == b"\x04main"));
        assert!(out.wasm.windows(7).any(|w| w == b"\x06memory"));
        // An import the glue does not define renames nothing.
        let missing = minify(&wasm, "const import0 = { __wbg_new_0123: 1 };");
        assert_eq!(
            missing.unwrap_err(),
            Error::Glue {
                name: "__wbindgen_cast_77".into(),
                found: 0
            }
        );
    }
}
