//! The webgpu-guard demo as a library: the scene, its meshes, the orbit camera and
//! its math (plain Rust, tested on the host), and the page that wires them to a
//! [`webgpu_guard::web::Runtime`] (browser only). The `demo` binary runs the page;
//! the benchmark page reuses the scene.

pub mod camera;
pub mod console_args;
pub mod math;
pub mod mesh;

#[cfg(target_arch = "wasm32")]
pub mod chaos_run;
#[cfg(target_arch = "wasm32")]
pub mod page;
#[cfg(target_arch = "wasm32")]
pub mod scene;
