//! trunk's post-build hook (Trunk.toml): in the staging folder trunk names
//! (`TRUNK_STAGING_DIR`, or the first argument), shortens the names of every
//! `*_bg.wasm` and its glue and mends the pages' integrity hashes
//! ([`minify_imports::minify_folder`]); a module whose glue does not match
//! fails the build, saying which import, and leaves the folder as it was.

use std::env;
use std::path::PathBuf;
use std::process::ExitCode;

use minify_imports::minify_folder;

fn main() -> ExitCode {
    let dir = env::args_os()
        .nth(1)
        .or_else(|| env::var_os("TRUNK_STAGING_DIR"))
        .map(PathBuf::from);
    let Some(dir) = dir else {
        eprintln!("minify-imports: no folder (give one, or run as trunk's post_build hook)");
        return ExitCode::FAILURE;
    };
    match minify_folder(&dir) {
        Ok(reports) => {
            for r in reports {
                println!(
                    "minify-imports: {}: {} imports and {} exports renamed, {} bytes to {} ({} integrity hashes mended)",
                    r.module, r.imports, r.exports, r.before, r.after, r.hashes
                );
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("minify-imports: {message}");
            ExitCode::FAILURE
        }
    }
}
