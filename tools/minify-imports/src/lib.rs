//! Shortens the names a wasm-bindgen module imports from its own JavaScript
//! glue, and those of its exports the glue reads.
//!
//! wasm-bindgen names every function the glue gives the module after the
//! binding and a hash (`__wbg_createBuffer_0123456789abcdef`): some 35 bytes
//! each, the hash incompressible, a few hundred of them in an application on
//! web-sys. This crate renames them `a`, `b`, ... `Zz` in the wasm's import
//! section and in the glue's import object alike, as emscripten does, and
//! mends the page's subresource-integrity hashes of both files. The exports
//! the glue reads as `wasm.name` (the allocator, each closure's shim, a
//! 60-byte name with its hash) are shortened the same way; `memory` and any
//! export the glue does not read keep their names. Imports from
//! other modules (a crate's JavaScript snippets) keep their names: they are
//! those modules' exports. Nothing is renamed unless every name is found
//! exactly once in the glue, as the key of a property.

mod glue;
mod integrity;
mod names;
mod wasm;

pub use glue::{reads_export, rename_in_glue};
pub use integrity::{replace_integrity, sri};
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

/// Whether wasm-bindgen made the import named `name` for its glue (and not a
/// snippet's export): `__wbg_` and `__wbindgen_` names are the glue's.
pub fn is_glue_import(name: &str) -> bool {
    name.starts_with("__wbg_") || name.starts_with("__wbindgen_")
}
