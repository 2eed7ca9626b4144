//! The wasm side: the import and export sections read and written again with
//! new names. Every other section is copied as it is, byte for byte.

use crate::names::short_names;
use crate::Error;

/// A module whose names were shortened.
#[derive(Debug)]
pub struct Renamed {
    /// The module, its import and export sections rewritten.
    pub wasm: Vec<u8>,
    /// Each renamed import: (its old name, its new name), in the section's
    /// order.
    pub imports: Vec<(String, String)>,
    /// Each renamed export, likewise.
    pub exports: Vec<(String, String)>,
}

const MAGIC: &[u8; 8] = b"\0asm\x01\0\0\0";
const IMPORT_SECTION: u8 = 2;
const EXPORT_SECTION: u8 = 7;

/// Gives every import of `wasm` that `import(module, name)` picks, and every
/// export whose name `export` picks, a short name ([`short_names`]), none equal
/// to a name kept in its section. A picked function imported twice under one
/// name keeps one new name.
pub fn rename(
    wasm: &[u8],
    import: impl Fn(&str, &str) -> bool,
    export: impl Fn(&str) -> bool,
) -> Result<Renamed, Error> {
    if !wasm.starts_with(MAGIC) {
        return Err(Error::Wasm {
            offset: 0,
            what: "not a WebAssembly module (version 1)",
        });
    }
    let mut renamed = Renamed {
        wasm: MAGIC.to_vec(),
        imports: Vec::new(),
        exports: Vec::new(),
    };
    let mut reader = Reader {
        bytes: wasm,
        at: MAGIC.len(),
    };
    while !reader.done() {
        let start = reader.at;
        let id = reader.byte()?;
        let size = reader.u32()? as usize;
        let base = reader.at;
        let body = reader.take(size, "a section runs past the end")?;
        let (body, given) = match id {
            IMPORT_SECTION => rename_imports(body, &import).map_err(|e| e.shifted(base))?,
            EXPORT_SECTION => rename_exports(body, &export).map_err(|e| e.shifted(base))?,
            _ => {
                renamed.wasm.extend_from_slice(&wasm[start..reader.at]);
                continue;
            }
        };
        if id == IMPORT_SECTION {
            renamed.imports = given;
        } else {
            renamed.exports = given;
        }
        renamed.wasm.push(id);
        write_u32(&mut renamed.wasm, body.len() as u32);
        renamed.wasm.extend_from_slice(&body);
    }
    Ok(renamed)
}

type Section = (Vec<u8>, Vec<(String, String)>);

/// The import section `body` with the picked imports renamed, and the names
/// given.
fn rename_imports(body: &[u8], pick: &impl Fn(&str, &str) -> bool) -> Result<Section, Error> {
    let mut reader = Reader { bytes: body, at: 0 };
    let count = reader.u32()? as usize;
    // No more entries than bytes, whatever the count claims.
    let mut entries = Vec::with_capacity(count.min(body.len()));
    for _ in 0..count {
        let module = reader.name()?;
        let field = reader.name()?;
        let start = reader.at;
        reader.skip_import_kind()?;
        entries.push((module, field, pick(module, field), &body[start..reader.at]));
    }
    reader.finished("bytes after the last import")?;
    let kept: Vec<&str> = entries.iter().filter(|e| !e.2).map(|e| e.1).collect();
    let mut namer = Namer::new(&kept, entries.len());
    let mut out = Vec::with_capacity(body.len());
    write_u32(&mut out, count as u32);
    for (module, field, picked, kind) in entries {
        write_name(&mut out, module);
        write_name(&mut out, &namer.name(field, picked));
        out.extend_from_slice(kind);
    }
    Ok((out, namer.given))
}

/// The export section `body` with the picked exports renamed, and the names
/// given.
fn rename_exports(body: &[u8], pick: &impl Fn(&str) -> bool) -> Result<Section, Error> {
    let mut reader = Reader { bytes: body, at: 0 };
    let count = reader.u32()? as usize;
    let mut entries = Vec::with_capacity(count.min(body.len()));
    for _ in 0..count {
        let name = reader.name()?;
        let start = reader.at;
        reader.byte()?;
        reader.u32()?;
        entries.push((name, pick(name), &body[start..reader.at]));
    }
    reader.finished("bytes after the last export")?;
    let kept: Vec<&str> = entries.iter().filter(|e| !e.1).map(|e| e.0).collect();
    let mut namer = Namer::new(&kept, entries.len());
    let mut out = Vec::with_capacity(body.len());
    write_u32(&mut out, count as u32);
    for (name, picked, what) in entries {
        write_name(&mut out, &namer.name(name, picked));
        out.extend_from_slice(what);
    }
    Ok((out, namer.given))
}

/// The names of one section: the picked ones shortened, the others kept.
struct Namer {
    fresh: std::vec::IntoIter<String>,
    given: Vec<(String, String)>,
}

impl Namer {
    /// Short names for at most `most` entries, none of them in `kept`.
    fn new(kept: &[&str], most: usize) -> Self {
        let fresh: Vec<String> = short_names()
            .filter(|n| !kept.contains(&n.as_str()))
            .take(most)
            .collect();
        Namer {
            fresh: fresh.into_iter(),
            given: Vec::new(),
        }
    }

    /// The name `old` has from now on: its own unless `picked`.
    fn name(&mut self, old: &str, picked: bool) -> String {
        if !picked {
            return old.to_owned();
        }
        if let Some((_, new)) = self.given.iter().find(|(given, _)| given == old) {
            return new.clone();
        }
        let new = self.fresh.next().unwrap_or_default();
        self.given.push((old.to_owned(), new.clone()));
        new
    }
}

/// A cursor over a module's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// `Err(what)` unless every byte was read.
    fn finished(&self, what: &'static str) -> Result<(), Error> {
        if self.done() {
            Ok(())
        } else {
            self.fail(what)
        }
    }

    fn fail<T>(&self, what: &'static str) -> Result<T, Error> {
        Err(Error::Wasm {
            offset: self.at,
            what,
        })
    }

    /// `Err(what)` about the byte just read.
    fn fail_last<T>(&self, what: &'static str) -> Result<T, Error> {
        Err(Error::Wasm {
            offset: self.at - 1,
            what,
        })
    }

    fn byte(&mut self) -> Result<u8, Error> {
        let Some(&b) = self.bytes.get(self.at) else {
            return self.fail("the module ends early");
        };
        self.at += 1;
        Ok(b)
    }

    fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], Error> {
        match self.bytes.get(self.at..self.at.saturating_add(len)) {
            Some(slice) => {
                self.at += len;
                Ok(slice)
            }
            None => self.fail(what),
        }
    }

    /// An unsigned LEB128 of at most 32 bits.
    fn u32(&mut self) -> Result<u32, Error> {
        let mut value: u64 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return u32::try_from(value).or_else(|_| self.fail("a number over 32 bits"));
            }
        }
        self.fail("a number over 32 bits")
    }

    /// A signed LEB128 of at most 33 bits (a heap type), skipped.
    fn skip_s33(&mut self) -> Result<(), Error> {
        for _ in 0..5 {
            if self.byte()? & 0x80 == 0 {
                return Ok(());
            }
        }
        self.fail("a heap type over 33 bits")
    }

    fn name(&mut self) -> Result<&'a str, Error> {
        let len = self.u32()? as usize;
        let start = self.at;
        let bytes = self.take(len, "a name runs past the end")?;
        std::str::from_utf8(bytes).or(Err(Error::Wasm {
            offset: start,
            what: "a name that is not UTF-8",
        }))
    }

    /// What an import brings in (function, table, memory, global, tag), skipped.
    fn skip_import_kind(&mut self) -> Result<(), Error> {
        match self.byte()? {
            0x00 => self.u32().map(drop),
            0x01 => {
                self.skip_ref_type()?;
                self.skip_limits()
            }
            0x02 => self.skip_limits(),
            0x03 => {
                self.skip_value_type()?;
                match self.byte()? {
                    0 | 1 => Ok(()),
                    _ => self.fail_last("a global's mutability is neither 0 nor 1"),
                }
            }
            0x04 => {
                self.byte()?;
                self.u32().map(drop)
            }
            _ => self.fail_last("an import of an unknown kind"),
        }
    }

    fn skip_limits(&mut self) -> Result<(), Error> {
        let flags = self.byte()?;
        if flags > 0x07 {
            return self.fail_last("limits with unknown flags");
        }
        // A memory64's limits are 64-bit numbers.
        self.skip_leb()?;
        if flags & 0x01 != 0 {
            self.skip_leb()?;
        }
        Ok(())
    }

    /// Any unsigned LEB128 up to 64 bits.
    fn skip_leb(&mut self) -> Result<(), Error> {
        for _ in 0..10 {
            if self.byte()? & 0x80 == 0 {
                return Ok(());
            }
        }
        self.fail("a number over 64 bits")
    }

    fn skip_ref_type(&mut self) -> Result<(), Error> {
        match self.byte()? {
            // funcref, externref and the other abbreviated reference types.
            0x69..=0x74 => Ok(()),
            // (ref null? heaptype)
            0x63 | 0x64 => self.skip_s33(),
            _ => self.fail_last("an unknown reference type"),
        }
    }

    fn skip_value_type(&mut self) -> Result<(), Error> {
        match self.bytes.get(self.at) {
            // i32, i64, f32, f64, v128
            Some(0x7b..=0x7f) => self.byte().map(drop),
            _ => self.skip_ref_type(),
        }
    }
}

impl Error {
    /// The error with its offset read from the start of the module.
    fn shifted(self, base: usize) -> Self {
        match self {
            Error::Wasm { offset, what } => Error::Wasm {
                offset: offset + base,
                what,
            },
            other => other,
        }
    }
}

fn write_u32(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let low = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

fn write_name(out: &mut Vec<u8>, name: &str) {
    write_u32(out, name.len() as u32);
    out.extend_from_slice(name.as_bytes());
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::is_glue_import;

    /// A module importing, from `module`, each `(name, kind bytes)`; a
    /// custom section after the imports that must come through unchanged.
    pub(crate) fn module(imports: &[(&str, &str, &[u8])]) -> Vec<u8> {
        with_exports(imports, &[])
    }

    /// The same, exporting each name of `exports` (functions 0, 1, ...)
    /// after the custom section.
    pub(crate) fn with_exports(imports: &[(&str, &str, &[u8])], exports: &[&str]) -> Vec<u8> {
        let mut section = Vec::new();
        write_u32(&mut section, imports.len() as u32);
        for (module, name, kind) in imports {
            write_name(&mut section, module);
            write_name(&mut section, name);
            section.extend_from_slice(kind);
        }
        let mut wasm = MAGIC.to_vec();
        // A type section: one function type () -> (), its size written in
        // two bytes (as a linker may pad it), which must stay so.
        wasm.extend_from_slice(&[1, 0x84, 0x00, 1, 0x60, 0, 0]);
        wasm.push(IMPORT_SECTION);
        write_u32(&mut wasm, section.len() as u32);
        wasm.extend_from_slice(&section);
        let mut custom = Vec::new();
        write_name(&mut custom, "kept");
        custom.extend_from_slice(b"\x01\x02\x03");
        wasm.push(0);
        write_u32(&mut wasm, custom.len() as u32);
        wasm.extend_from_slice(&custom);
        if !exports.is_empty() {
            let mut section = Vec::new();
            write_u32(&mut section, exports.len() as u32);
            for (index, name) in exports.iter().enumerate() {
                write_name(&mut section, name);
                section.push(0);
                write_u32(&mut section, index as u32);
            }
            wasm.push(EXPORT_SECTION);
            write_u32(&mut wasm, section.len() as u32);
            wasm.extend_from_slice(&section);
        }
        wasm
    }

    /// A reader over the body of `wasm`'s section `id` (empty if none).
    fn section(wasm: &[u8], id: u8) -> Reader<'_> {
        let mut reader = Reader { bytes: wasm, at: 8 };
        while !reader.done() {
            let this = reader.byte().unwrap();
            let size = reader.u32().unwrap() as usize;
            let body = reader.take(size, "").unwrap();
            if this == id {
                return Reader { bytes: body, at: 0 };
            }
        }
        Reader { bytes: &[], at: 0 }
    }

    /// The names `wasm` exports.
    fn exports_of(wasm: &[u8]) -> Vec<String> {
        let mut section = section(wasm, EXPORT_SECTION);
        let count = if section.done() {
            0
        } else {
            section.u32().unwrap()
        };
        (0..count)
            .map(|_| {
                let name = section.name().unwrap().to_owned();
                section.byte().unwrap();
                section.u32().unwrap();
                name
            })
            .collect()
    }

    fn glue(wasm: &[u8]) -> Result<Renamed, Error> {
        rename(wasm, is_glue_import, |_| false)
    }

    /// The (module, name) of each import of `wasm`.
    fn imports_of(wasm: &[u8]) -> Vec<(String, String)> {
        let mut section = section(wasm, IMPORT_SECTION);
        let count = if section.done() {
            0
        } else {
            section.u32().unwrap()
        };
        (0..count)
            .map(|_| {
                let module = section.name().unwrap().to_owned();
                let name = section.name().unwrap().to_owned();
                section.skip_import_kind().unwrap();
                (module, name)
            })
            .collect()
    }

    const FUNC: &[u8] = &[0x00, 0x00];

    #[test]
    fn glue_imports_get_short_names_and_snippet_imports_keep_theirs() {
        let wasm = module(&[
            ("./app_bg.js", "__wbg_createBuffer_0123456789abcdef", FUNC),
            ("./snippets/x/a.js", "a", FUNC),
            ("./app_bg.js", "__wbindgen_init_externref_table", FUNC),
            ("./app_bg.js", "__wbg_createBuffer_0123456789abcdef", FUNC),
            ("./snippets/x/b.js", "guard_push", FUNC),
            // A snippet's export that reads like the glue's own.
            ("./snippets/x/b.js", "__wbg_helper", FUNC),
        ]);
        let renamed = glue(&wasm).unwrap();
        assert_eq!(
            imports_of(&renamed.wasm),
            [
                ("./app_bg.js", "b"),
                ("./snippets/x/a.js", "a"),
                ("./app_bg.js", "c"),
                ("./app_bg.js", "b"),
                ("./snippets/x/b.js", "guard_push"),
                ("./snippets/x/b.js", "__wbg_helper"),
            ]
            .map(|(m, n)| (m.to_owned(), n.to_owned()))
        );
        assert_eq!(
            renamed.imports,
            [
                ("__wbg_createBuffer_0123456789abcdef", "b"),
                ("__wbindgen_init_externref_table", "c"),
            ]
            .map(|(o, n)| (o.to_owned(), n.to_owned()))
        );
        // Everything but the import section is as it was: the type section
        // before, the custom section after.
        assert_eq!(renamed.wasm[..15], wasm[..15]);
        assert!(renamed.wasm.ends_with(b"\x04kept\x01\x02\x03"));
        assert!(renamed.wasm.len() < wasm.len());
    }

    #[test]
    fn every_kind_of_import_is_read_through() {
        let wasm = module(&[
            ("./app_bg.js", "__wbg_one", FUNC),
            // A table of externref, min 1 max 10.
            (
                "./app_bg.js",
                "__wbindgen_table",
                &[0x01, 0x6f, 0x01, 0x01, 0x0a],
            ),
            // A shared memory, min 17 max 16384.
            ("env", "memory", &[0x02, 0x03, 0x11, 0x80, 0x80, 0x01]),
            // A mutable i32 global.
            ("env", "__stack_pointer", &[0x03, 0x7f, 0x01]),
            // A tag of type 0.
            ("env", "__cpp_exception", &[0x04, 0x00, 0x00]),
            ("./app_bg.js", "__wbg_two", FUNC),
        ]);
        let renamed = glue(&wasm).unwrap();
        let names: Vec<String> = imports_of(&renamed.wasm)
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(
            names,
            [
                "a",
                "b",
                "memory",
                "__stack_pointer",
                "__cpp_exception",
                "c"
            ]
        );
    }

    #[test]
    fn picked_exports_get_short_names_and_the_others_keep_theirs() {
        let wasm = with_exports(
            &[("./app_bg.js", "__wbg_one", FUNC)],
            &[
                "memory",
                "__wbindgen_malloc",
                "b",
                "invoke_h0123",
                "__wbindgen_free",
            ],
        );
        let renamed = rename(&wasm, is_glue_import, |name| name != "memory").unwrap();
        assert_eq!(exports_of(&renamed.wasm), ["memory", "a", "b", "c", "d"]);
        assert_eq!(
            renamed.exports,
            [
                ("__wbindgen_malloc", "a"),
                ("b", "b"),
                ("invoke_h0123", "c"),
                ("__wbindgen_free", "d")
            ]
            .map(|(o, n)| (o.to_owned(), n.to_owned()))
        );
        // A kept "b" is given to no other.
        let kept = rename(&wasm, is_glue_import, |name| name.starts_with("__")).unwrap();
        assert_eq!(
            exports_of(&kept.wasm),
            ["memory", "a", "b", "invoke_h0123", "c"]
        );
        // Imports and exports are named apart: both start at "a".
        assert_eq!(kept.imports[0].1, "a");
    }

    #[test]
    fn a_module_without_imports_comes_through_unchanged() {
        let wasm = module(&[]);
        let renamed = glue(&wasm).unwrap();
        assert_eq!(renamed.wasm, wasm);
        assert!(renamed.imports.is_empty());
    }

    #[test]
    fn bad_bytes_are_refused_with_their_place() {
        assert_eq!(
            glue(b"not wasm").unwrap_err(),
            Error::Wasm {
                offset: 0,
                what: "not a WebAssembly module (version 1)"
            }
        );
        let mut wasm = module(&[("./app_bg.js", "__wbg_one", FUNC)]);
        // The section claims more bytes than the module has.
        let at = wasm.len();
        wasm.extend_from_slice(&[IMPORT_SECTION, 0x7f]);
        let err = glue(&wasm).unwrap_err();
        assert_eq!(
            err,
            Error::Wasm {
                offset: at + 2,
                what: "a section runs past the end"
            }
        );
        // The kind byte's own place: after the magic, the type section
        // (7 bytes), the section's id and size, the count, then two names.
        let unknown = module(&[("./app_bg.js", "__wbg_one", &[0x09, 0x00])]);
        let place = 8 + 7 + 2 + 1 + (1 + "./app_bg.js".len()) + (1 + "__wbg_one".len());
        assert_eq!(unknown[place], 0x09);
        assert_eq!(
            glue(&unknown).unwrap_err(),
            Error::Wasm {
                offset: place,
                what: "an import of an unknown kind"
            }
        );
        // A count that claims more entries than there are bytes.
        let mut lying = MAGIC.to_vec();
        lying.extend_from_slice(&[IMPORT_SECTION, 5, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(matches!(
            glue(&lying).unwrap_err(),
            Error::Wasm {
                what: "the module ends early",
                ..
            }
        ));
    }
}
