//! The wgpu examples in a real window, on a real X display (Xvfb) with
//! Vulkan on lavapipe: started, the device lost by the console's key (F8, an
//! injected loss), and the window's picture after the recovery identical to
//! the picture before, read from the X display itself (painted over first,
//! so that only the new device's frames can bring it back). The triangle
//! draws from nothing; the Game of Life's board lives only on the GPU and
//! comes back from its snapshot.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    ConnectionExt as _, CreateGCAux, ImageFormat, InputFocus, Rectangle,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::CURRENT_TIME;

/// The part of the display read: the top left corner, where the window is
/// (no window manager places it elsewhere), as large as the smaller window.
const WIDTH: u16 = 480;
const HEIGHT: u16 = 360;
/// X's keysym for F8.
const XK_F8: u32 = 0xffc5;

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (50 ms at a time) until `done` holds; fails after `seconds`.
fn wait_for(what: &str, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The example `package`, built as `cargo run` would build it.
fn example_binary(package: &str) -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", package])
        .current_dir(workspace())
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the example does not build");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    target.join("debug").join(package)
}

/// A display number no X server uses.
fn free_display() -> u32 {
    (90..190)
        .find(|n| {
            !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
                && !Path::new(&format!("/tmp/.X{n}-lock")).exists()
        })
        .expect("a free display number")
}

/// The window's area of the display, as the X server has it.
fn screenshot(x: &impl Connection, root: u32) -> Vec<u8> {
    x.get_image(ImageFormat::Z_PIXMAP, root, 0, 0, WIDTH, HEIGHT, !0)
        .expect("get_image sent")
        .reply()
        .expect("the display's picture")
        .data
}

/// Whether `picture` (32-bit BGRX) holds the triangle's orange (as an sRGB
/// surface encodes it).
fn shows_the_triangle(picture: &[u8]) -> bool {
    picture
        .chunks_exact(4)
        .any(|p| p[2] > 220 && (120..230).contains(&p[1]) && p[0] < 150)
}

#[test]
fn the_triangle_s_window_is_identical_after_a_loss_forced_by_its_key() {
    survives_a_loss_in_its_window(
        "webgpu-guard-wgpu-triangle",
        &[],
        "device generation 1 running",
        shows_the_triangle,
    );
}

#[test]
fn the_life_board_s_window_is_identical_after_a_loss_forced_by_its_key() {
    // `--still`: the board stops after 60 steps; the picture is taken once
    // a snapshot holds the stopped board (the example says so).
    survives_a_loss_in_its_window(
        "webgpu-guard-wgpu-life",
        &["--still"],
        "life: the stopped board is in a snapshot",
        |picture| {
            picture
                .chunks_exact(4)
                .any(|p| p[0] > 100 || p[1] > 100 || p[2] > 100)
        },
    );
}

/// Runs `package` with `args` in a window on a display of its own, waits for
/// it to say `settled` and for a picture for which `ready` holds and which
/// stays the same for a second, presses F8, and waits for the new device to
/// draw that picture again.
fn survives_a_loss_in_its_window(
    package: &str,
    args: &[&str],
    settled: &str,
    ready: fn(&[u8]) -> bool,
) {
    let binary = example_binary(package);
    let display = free_display();
    let _xvfb = Killed(
        Command::new("Xvfb")
            .arg(format!(":{display}"))
            .args(["-screen", "0", "640x480x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb (scripts/setup.sh installs it)"),
    );
    let socket = format!("/tmp/.X11-unix/X{display}");
    wait_for("Xvfb", 20, || Path::new(&socket).exists());
    let runtime_dir = std::env::temp_dir().join(format!("wgpu-window-{display}"));
    std::fs::create_dir_all(&runtime_dir).expect("a runtime directory");
    let mut child = Command::new(&binary)
        .env("DISPLAY", format!(":{display}"))
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .env_remove("WAYLAND_DISPLAY")
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let stderr = child.stderr.take().expect("its standard error");
    let _example = Killed(child);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let written = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            written.lock().unwrap().push(line);
        }
    });
    let said = |text: &str| lines.lock().unwrap().iter().any(|l| l.contains(text));
    let (x, screen) = x11rb::connect(Some(&format!(":{display}"))).expect("the display");
    let root = x.setup().roots[screen].root;

    wait_for("device 1", 60, || said("device generation 1 running"));
    wait_for(settled, 120, || said(settled));
    let shown = Instant::now();
    while !ready(&screenshot(&x, root)) {
        if shown.elapsed() > Duration::from_secs(60) {
            let picture = screenshot(&x, root);
            let mut colours: Vec<&[u8]> = picture.chunks_exact(4).collect();
            colours.sort();
            colours.dedup();
            colours.truncate(8);
            let said = lines.lock().unwrap().join("\n");
            panic!("no picture on the display: colours {colours:?}; the example said:\n{said}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut before = screenshot(&x, root);
    let mut same = 0;
    wait_for("a picture that stays", 60, || {
        let now = screenshot(&x, root);
        same = if now == before { same + 1 } else { 0 };
        before = now;
        same >= 20
    });

    // The pointer over the window (focus follows it without a window
    // manager), then F8.
    let setup = x.setup();
    let mapping = x
        .get_keyboard_mapping(setup.min_keycode, setup.max_keycode - setup.min_keycode + 1)
        .expect("keyboard mapping sent")
        .reply()
        .expect("the keyboard mapping");
    let per = usize::from(mapping.keysyms_per_keycode);
    let f8 = mapping
        .keysyms
        .chunks(per)
        .position(|syms| syms.contains(&XK_F8))
        .map(|at| setup.min_keycode + at as u8)
        .expect("a key for F8");
    let motion = x11rb::protocol::xproto::MOTION_NOTIFY_EVENT;
    let press = x11rb::protocol::xproto::KEY_PRESS_EVENT;
    let release = x11rb::protocol::xproto::KEY_RELEASE_EVENT;
    x.xtest_fake_input(motion, 0, 0, root, 100, 100, 0)
        .expect("pointer moved");
    let windows = x
        .query_tree(root)
        .expect("query_tree sent")
        .reply()
        .expect("the windows")
        .children;
    let window = *windows.last().expect("the example's window");
    x.set_input_focus(InputFocus::PARENT, window, CURRENT_TIME)
        .expect("focus set");
    x.xtest_fake_input(press, f8, 0, root, 0, 0, 0)
        .expect("F8 pressed");
    x.xtest_fake_input(release, f8, 0, root, 0, 0, 0)
        .expect("F8 released");
    x.flush().expect("sent");

    wait_for("the injected loss", 30, || said("inject_loss()"));
    wait_for("device 2", 60, || said("device generation 2 running"));
    // The display keeps a window's last picture: painted over here, it
    // comes back only from frames the new device draws.
    let gc = x.generate_id().expect("an id");
    x.create_gc(
        gc,
        window,
        &CreateGCAux::new().foreground(setup.roots[screen].black_pixel),
    )
    .expect("a graphics context");
    let all_of_it = Rectangle {
        x: 0,
        y: 0,
        width: WIDTH,
        height: HEIGHT,
    };
    x.poly_fill_rectangle(window, gc, &[all_of_it])
        .expect("painted over");
    x.get_input_focus()
        .expect("a round trip sent")
        .reply()
        .expect("painted");
    // The first picture drawn over it is the new device's first frame seen:
    // the picture of before already, not one that reaches it later (a board
    // started again from its seed would, 60 steps on).
    let painted_over = |picture: &[u8]| picture.chunks_exact(4).all(|p| p[..3] == [0, 0, 0]);
    let mut after = Vec::new();
    wait_for("a frame over the painted window", 60, || {
        after = screenshot(&x, root);
        !painted_over(&after)
    });
    let differing = before
        .chunks_exact(4)
        .zip(after.chunks_exact(4))
        .filter(|(a, b)| a[..3] != b[..3])
        .count();
    assert_eq!(differing, 0, "pixels differ after the loss");
    let all = lines.lock().unwrap().join("\n");
    assert!(!all.contains("panicked"), "{all}");
}
