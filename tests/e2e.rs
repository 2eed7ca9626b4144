//! Browser end-to-end tests: the trunk build in `dist/`, served on 127.0.0.1,
//! driven in headless Chromium (real WebGPU on SwiftShader) through chromedriver.
//! Run by `scripts/test` after `trunk build --release`.
#![cfg(not(target_arch = "wasm32"))]

use std::time::{Duration, Instant};

use webgpu_guard_harness::{launch, new_profile, root, Browser, Driver, Flags, Profile, Server};

use serde_json::{json, Value};
use thirtyfour::prelude::*;
use webgpu_guard_demo::math;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Whether `e` is chromedriver's "timed out receiving message from renderer":
/// the page's renderer was busy for 10 s (a GPU process starting again on a
/// loaded machine), which is no answer about the page.
fn renderer_busy(e: &thirtyfour::error::WebDriverError) -> bool {
    e.to_string()
        .contains("Timed out receiving message from renderer")
}

/// `call` again while the renderer was only busy (see [`renderer_busy`]), for
/// 120 s at most: a loaded machine makes a page slow, not wrong.
async fn patiently<T, F, Fut>(mut call: F) -> WebDriverResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = WebDriverResult<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match call().await {
            Err(e) if renderer_busy(&e) && Instant::now() < deadline => {
                eprintln!("the renderer was busy for 10 s (a loaded machine): asking again");
            }
            answer => return answer,
        }
    }
}

/// Fields drop in order: the browser and chromedriver first, so an unfinished
/// session never blocks on them.
struct Session {
    _profile: Profile,
    driver_process: Driver,
    driver: WebDriver,
    server: Server,
    browser: Browser,
}

/// Runs a test on Chromium and on Firefox, as `NAME::chromium` and `NAME::firefox`.
macro_rules! on_both {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn chromium() -> super::TestResult {
                super::$name(super::Browser::Chromium).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn firefox() -> super::TestResult {
                super::$name(super::Browser::Firefox).await
            }
        }
    };
}

async fn session(browser: Browser, flags: Flags) -> Result<Session, Box<dyn std::error::Error>> {
    let chromedriver = Driver::for_browser_with(browser, flags);
    let server = Server::start(root().join("dist"));
    let profile = new_profile();
    let driver = launch(&chromedriver, &profile, flags).await?;
    if browser == Browser::Firefox {
        // No CDP: the console comes through geckodriver's output.
        return Ok(Session {
            _profile: profile,
            driver_process: chromedriver,
            driver,
            server,
            browser,
        });
    }
    // Count console lines and page errors from the very first script.
    driver
        .cdp()
        .send_raw(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": r#"
                window.__lines = {error: [], warn: [], info: [], log: []};
                window.__lineTimes = [];
                window.__pageErrors = [];
                for (const level of ['error', 'warn', 'info', 'log']) {
                  const original = console[level].bind(console);
                  console[level] = (...args) => {
                    const text = args.map(String).join(' ');
                    window.__lines[level].push(text);
                    // The line of a runtime giving up is never held back:
                    // the rate limit's count leaves it out.
                    if (text.includes('[webgpu-guard]') && !text.includes('giving up: ')) window.__lineTimes.push(performance.now());
                    original(...args);
                  };
                }
                addEventListener('error', e => window.__pageErrors.push(String(e.message)));
                addEventListener('unhandledrejection', e => window.__pageErrors.push('unhandled rejection: ' + String(e.reason)));
            "#}),
        )
        .await?;
    Ok(Session {
        _profile: profile,
        driver_process: chromedriver,
        driver,
        server,
        browser,
    })
}

impl Session {
    async fn open(&self, query: &str) -> WebDriverResult<()> {
        self.driver
            .goto(self.server.url(&format!("index.html{query}")))
            .await
    }

    async fn eval(&self, script: &str) -> WebDriverResult<Value> {
        patiently(|| async { Ok(self.driver.execute(script, vec![]).await?.json().clone()) }).await
    }

    async fn status(&self) -> WebDriverResult<Value> {
        self.eval("return window.gpuStatus ? window.gpuStatus() : null")
            .await
    }

    /// Polls `gpuStatus()` until `done` holds; panics with the last status after `secs`.
    async fn wait_for(
        &self,
        what: &str,
        secs: u64,
        done: impl Fn(&Value) -> bool,
    ) -> WebDriverResult<Value> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let status = match tokio::time::timeout(Duration::from_secs(20), self.status()).await {
                Ok(status) => status?,
                Err(_) => panic!("gpuStatus() did not answer in 20 s while waiting for {what}"),
            };
            if !status.is_null() && done(&status) {
                return Ok(status);
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; last status: {status}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn wait_running(&self, generation: u64) -> WebDriverResult<Value> {
        self.wait_for(&format!("running generation {generation}"), 60, |s| {
            s["state"] == "running"
                && s["generation"].as_u64() == Some(generation)
                && s["frames"].as_u64().unwrap_or(0) > 0
        })
        .await?;
        // A few frames on the new device, so the canvas shows it.
        let frames = self.status().await?["frames"].as_u64().unwrap_or(0);
        self.wait_for("three more frames", 90, |s| {
            s["frames"].as_u64().unwrap_or(0) >= frames + 3
        })
        .await
    }

    /// Waits until `#canvas` has `expected` as `[clientWidth, clientHeight,
    /// width, height, devicePixelRatio]` (30 s at most); returns it.
    async fn wait_geometry(&self, expected: Value) -> WebDriverResult<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let geometry = self
                .eval(
                    "const c = document.getElementById('canvas'); \
                     return [c.clientWidth, c.clientHeight, c.width, c.height, devicePixelRatio];",
                )
                .await?;
            if geometry == expected {
                return Ok(geometry);
            }
            assert!(Instant::now() < deadline, "the canvas stayed at {geometry}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `count` more frames than now were drawn (90 s at most).
    async fn wait_frames(&self, count: u64) -> WebDriverResult<Value> {
        let frames = self.status().await?["frames"].as_u64().unwrap_or(0);
        self.wait_for(&format!("{count} more frames"), 90, |s| {
            s["frames"].as_u64().unwrap_or(0) >= frames + count
        })
        .await
    }

    /// After a recovery: running at `generation` or later with new frames. A
    /// frozen picture is never accepted: where the engine stops delivering
    /// animation frames after the recovery (seen on Firefox 153 headless), the
    /// runtime must report the stall once and recover it itself (it asks for a
    /// frame again, then draws from a timer on the same device); returns the status and the
    /// stall lines the page wrote.
    async fn wait_recovered(&self, generation: u64) -> WebDriverResult<(Value, Vec<String>)> {
        self.wait_for(&format!("running generation {generation}"), 60, |s| {
            s["state"] == "running" && s["generation"].as_u64() >= Some(generation)
        })
        .await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = self.status().await?;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let st = self.status().await?;
            let same_device = st["generation"] == seen["generation"];
            if st["state"] == "running"
                && same_device
                && st["frames"].as_u64().unwrap_or(0) >= seen["frames"].as_u64().unwrap_or(0) + 3
            {
                let stalls: Vec<String> = self
                    .lines("error")
                    .await?
                    .into_iter()
                    .filter(|l| l.contains("presentation stalled"))
                    .collect();
                return Ok((st, stalls));
            }
            if !same_device || st["state"] != "running" {
                seen = st;
                continue;
            }
            assert!(Instant::now() < deadline, "the picture stayed frozen: {st}");
        }
    }

    /// An element's pixels, from a screenshot.
    async fn element_image(&self, id: &str) -> Result<Image, Box<dyn std::error::Error>> {
        let png_bytes = patiently(|| async {
            self.driver
                .find(By::Id(id))
                .await?
                .screenshot_as_png()
                .await
        })
        .await?;
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        let mut reader = decoder.read_info()?;
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf)?;
        let channels = info.color_type.samples();
        let mut rgba = Vec::with_capacity((info.width * info.height * 4) as usize);
        for px in buf[..info.buffer_size()].chunks(channels) {
            rgba.extend_from_slice(&[px[0], px[1], px[2], if channels == 4 { px[3] } else { 255 }]);
        }
        Ok(Image {
            width: info.width,
            height: info.height,
            rgba,
        })
    }

    async fn canvas(&self) -> Result<Image, Box<dyn std::error::Error>> {
        // The HUD is HTML over the canvas whose numbers change: hidden while the
        // canvas is captured, so the capture is the canvas alone.
        self.eval("document.getElementById('hud').style.visibility = 'hidden'; return true")
            .await?;
        let image = self.element_image("scene").await;
        self.eval("document.getElementById('hud').style.visibility = ''; return true")
            .await?;
        image
    }

    /// Waits until the element `id` shows `needle` (the HUD refreshes 4 times a second).
    async fn wait_text(&self, id: &str, needle: &str, secs: u64) -> WebDriverResult<String> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = self.driver.find(By::Id(id)).await?.text().await?;
            if text.contains(needle) {
                return Ok(text);
            }
            if Instant::now() > deadline {
                panic!("#{id} never showed {needle:?}; it shows:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Firefox's console lines of `level` for this page, read from geckodriver's
    /// output (`console.error: "text"`), with when they were read.
    fn firefox_lines(&self, level: &str) -> Vec<(Instant, String)> {
        let prefix = format!("console.{level}: ");
        let mut out: Vec<(Instant, String)> = Vec::new();
        let mut current: Option<(Instant, String)> = None;
        for (at, line) in self.driver_process.console() {
            if let Some(rest) = line.strip_prefix(&prefix) {
                if let Some(done) = current.take() {
                    out.push(done);
                }
                let text = rest.trim().trim_start_matches('"').trim_end_matches('"');
                // Firefox escapes quotes and line breaks of the logged string.
                let text = text.replace("\\\"", "\"").replace("\\n", "\n");
                current = Some((at, text));
            } else if line.starts_with("console.") || line.starts_with("JavaScript") {
                if let Some(done) = current.take() {
                    out.push(done);
                }
            } else if let Some((_, text)) = current.as_mut() {
                text.push('\n');
                text.push_str(line.trim_end_matches('"'));
            }
        }
        out.extend(current);
        out.retain(|(_, text)| text.contains("[webgpu-guard]"));
        out
    }

    async fn lines(&self, level: &str) -> WebDriverResult<Vec<String>> {
        if self.browser == Browser::Firefox {
            return Ok(self
                .firefox_lines(level)
                .into_iter()
                .map(|(_, text)| text)
                .collect());
        }
        let v = self.eval(&format!("return window.__lines.{level}")).await?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Fails the test with the page's errors and unhandled rejections, if any.
    async fn assert_no_page_errors(&self) -> WebDriverResult<()> {
        let errors = self.page_errors().await?;
        assert!(errors.is_empty(), "page errors: {errors:?}");
        Ok(())
    }

    async fn page_errors(&self) -> WebDriverResult<Vec<String>> {
        if self.browser == Browser::Firefox {
            // Errors of the page itself (not of the browser's own chrome scripts).
            return Ok(self
                .driver_process
                .console()
                .into_iter()
                .map(|(_, line)| line)
                .filter(|line| {
                    line.contains("127.0.0.1")
                        && (line.starts_with("JavaScript error") || line.contains("uncaught"))
                })
                .collect());
        }
        let v = self.eval("return window.__pageErrors").await?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn crash_gpu_process(&self) -> WebDriverResult<()> {
        self.driver
            .cdp()
            .send_raw("Browser.crashGpuProcess", json!({}))
            .await?;
        Ok(())
    }

    async fn quit(self) -> WebDriverResult<()> {
        // Kill chromedriver and the browser first: a DELETE /session to a browser
        // whose GPU access was blocked can hang; a refused connection does not.
        let Session {
            _profile,
            driver_process,
            driver,
            ..
        } = self;
        if driver_process.browser == Browser::Firefox {
            // geckodriver ends its Firefox on DELETE /session; then the group goes.
            let _ = tokio::time::timeout(Duration::from_secs(15), driver.quit()).await;
            drop(driver_process);
            drop(_profile);
            return Ok(());
        }
        drop(_profile);
        drop(driver_process);
        let _ = tokio::time::timeout(Duration::from_secs(15), driver.quit()).await;
        Ok(())
    }
}

#[derive(PartialEq)]
struct Image {
    width: u32,
    height: u32,
    rgba: Vec<u8>,
}

impl Image {
    fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.width + x) * 4) as usize;
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }

    fn distinct_colors(&self) -> usize {
        let mut set = std::collections::HashSet::new();
        for px in self.rgba.chunks(4) {
            set.insert([px[0], px[1], px[2]]);
        }
        set.len()
    }

    /// Writes the image as a PNG (to look at a failure).
    fn save(&self, name: &str) {
        let path = root().join("target").join(name);
        if let Ok(file) = std::fs::File::create(&path) {
            let mut encoder =
                png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            if let Ok(mut writer) = encoder.write_header() {
                let _ = writer.write_image_data(&self.rgba);
            }
        }
    }

    /// Compares with `other`, saving both under `target/` when they differ.
    fn differing_pixels_saved(&self, other: &Image, name: &str) -> usize {
        let n = self.differing_pixels(other);
        if n > 0 {
            self.save(&format!("{name}-before.png"));
            other.save(&format!("{name}-after.png"));
        }
        n
    }

    /// Pixels that differ, outside the masked HUD of either image (masked pixels
    /// are fully transparent; the canvas is opaque).
    fn differing_pixels(&self, other: &Image) -> usize {
        assert_eq!((self.width, self.height), (other.width, other.height));
        self.rgba
            .chunks(4)
            .zip(other.rgba.chunks(4))
            .filter(|(a, b)| a[3] != 0 && b[3] != 0 && a != b)
            .count()
    }

    /// Mean luminance of a (2r+1)^2 patch.
    fn luminance(&self, x: u32, y: u32, r: u32) -> f64 {
        let mut sum = 0.0;
        let mut n = 0.0;
        for yy in y.saturating_sub(r)..=(y + r).min(self.height - 1) {
            for xx in x.saturating_sub(r)..=(x + r).min(self.width - 1) {
                let p = self.pixel(xx, yy);
                sum += 0.2126 * p[0] as f64 + 0.7152 * p[1] as f64 + 0.0722 * p[2] as f64;
                n += 1.0;
            }
        }
        sum / n
    }
}

fn num(v: &Value, key: &str) -> u64 {
    v[key].as_f64().map(|f| f as u64).unwrap_or(0)
}

on_both!(page_renders_and_frames_grow);
async fn page_renders_and_frames_grow(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpu).await?;
    s.open("?still").await?;
    let status = s.wait_running(1).await?;
    assert_eq!(status["lastLoss"], Value::Null);
    assert!(
        status["shadowMapSize"].as_u64().unwrap_or(0) >= 1024,
        "{status}"
    );
    assert!(num(&status, "liveObjects") > 10, "{status}");
    assert!(num(&status, "liveBytes") > 4 * 1024 * 1024, "{status}");
    let before = num(&status, "frames");
    let later = s
        .wait_for("frames to grow", 30, |st| num(st, "frames") > before + 10)
        .await?;
    assert!(num(&later, "frames") > before + 10);
    let image = s.canvas().await?;
    assert!(image.width >= 300 && image.height >= 200);
    assert!(
        image.distinct_colors() > 200,
        "canvas looks blank: {} colours",
        image.distinct_colors()
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

/// The canvas position of world point `p` with the demo's camera (see
/// `src/bin/demo/camera.rs`): fov 0.9, near 0.1, far 200, target (0, 0.8, 0).
fn project(p: [f32; 3], yaw: f32, pitch: f32, distance: f32, w: u32, h: u32) -> (u32, u32) {
    let target = [0.0, 0.8, 0.0];
    let eye = [
        target[0] + distance * pitch.cos() * yaw.sin(),
        target[1] + distance * pitch.sin(),
        target[2] + distance * pitch.cos() * yaw.cos(),
    ];
    let view = math::look_at(eye, target, [0.0, 1.0, 0.0]);
    let proj = math::perspective(0.9, 960.0 / 600.0, 0.1, 200.0);
    let clip = math::transform(&math::mul(&proj, &view), p);
    let (nx, ny) = (clip[0] / clip[3], clip[1] / clip[3]);
    (
        ((nx * 0.5 + 0.5) * w as f32) as u32,
        ((1.0 - (ny * 0.5 + 0.5)) * h as f32) as u32,
    )
}

on_both!(shadow_darkens_the_ground_under_the_light_path);
async fn shadow_darkens_the_ground_under_the_light_path(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpu).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    // Look from the side the pillar's shadow falls towards (light travels to -x, -z).
    let (yaw, pitch, distance) = (3.74f32, 0.7f32, 14.0f32);
    s.eval(&format!(
        "window.gpuCamera({yaw}, {pitch}, {distance}); return true"
    ))
    .await?;
    let frames = num(&s.status().await?, "frames");
    s.wait_for("frames after the camera move", 30, |st| {
        num(st, "frames") > frames + 3
    })
    .await?;
    let image = s.canvas().await?;
    // The pillar (0..3 high at the origin) casts its shadow along (-0.45, -0.3) on
    // the ground; (-0.9, 0, -0.6) is inside it, (-1.2, 0, 1.3) is open ground.
    let (sx, sy) = project(
        [-0.9, 0.0, -0.6],
        yaw,
        pitch,
        distance,
        image.width,
        image.height,
    );
    let (lx, ly) = project(
        [-1.2, 0.0, 1.3],
        yaw,
        pitch,
        distance,
        image.width,
        image.height,
    );
    let shadowed = image.luminance(sx, sy, 2);
    let lit = image.luminance(lx, ly, 2);
    assert!(
        shadowed < lit * 0.75,
        "ground in the pillar's shadow ({sx},{sy}) = {shadowed:.1} is not darker than open ground ({lx},{ly}) = {lit:.1}"
    );
    s.quit().await?;
    Ok(())
}

on_both!(orbit_drag_and_wheel_change_the_picture);
async fn orbit_drag_and_wheel_change_the_picture(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpu).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    let before = s.canvas().await?;
    let camera_before = s.status().await?["camera"].clone();
    let canvas = s.driver.find(By::Id("scene")).await?;
    s.driver
        .action_chain()
        .drag_and_drop_element_by_offset(&canvas, 120, 40)
        .perform()
        .await?;
    let frames = num(&s.status().await?, "frames");
    let status = s
        .wait_for("frames after the drag", 30, |st| {
            num(st, "frames") > frames + 3
        })
        .await?;
    assert_ne!(
        status["camera"]["yaw"], camera_before["yaw"],
        "drag did not turn the camera"
    );
    let after = s.canvas().await?;
    let changed = before.differing_pixels(&after);
    assert!(changed > 5000, "only {changed} pixels changed after a drag");
    s.eval("document.getElementById('scene').dispatchEvent(new WheelEvent('wheel', {deltaY: 400, bubbles: true, cancelable: true})); return true").await?;
    let status = s
        .wait_for("zoom", 10, |st| {
            st["camera"]["distance"] != status["camera"]["distance"]
        })
        .await?;
    assert!(status["camera"]["distance"].as_f64() > camera_before["distance"].as_f64());
    // Two fingers moving apart zoom in.
    s.eval(
        "const c = document.getElementById('scene');
         const ev = (type, id, x) => c.dispatchEvent(new PointerEvent(type,
           {pointerId: id, clientX: x, clientY: 300, buttons: 1, bubbles: true, pointerType: 'touch'}));
         ev('pointerdown', 11, 300); ev('pointerdown', 12, 400);
         ev('pointermove', 12, 520); ev('pointerup', 11, 300); ev('pointerup', 12, 520);
         return true",
    )
    .await?;
    let pinched = s.status().await?;
    assert!(
        pinched["camera"]["distance"].as_f64() < status["camera"]["distance"].as_f64(),
        "pinch did not zoom in: {} -> {}",
        status["camera"]["distance"],
        pinched["camera"]["distance"]
    );
    s.quit().await?;
    Ok(())
}

on_both!(bad_console_input_gets_a_usage_line_and_changes_nothing);
async fn bad_console_input_gets_a_usage_line_and_changes_nothing(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpu).await?;
    s.open("?still").await?;
    let before = s.wait_running(1).await?;
    let image_before = s.canvas().await?;
    for call in [
        "gpuFault(42)",
        "gpuFault()",
        "gpuFault(null)",
        "gpuFault({})",
        "gpuFault('meltdown')",
        "gpuDebug(42)",
        "gpuDebug()",
        "gpuDebug('loud')",
        "gpuCamera('a', null)",
        "gpuCamera()",
        "gpuCamera(NaN, 1, 10)",
        "gpuCamera(1, Infinity, 10)",
        "gpuCamera(1, 1, '12')",
        "gpuCamera({}, [], true)",
    ] {
        let answer = s.eval(&format!("return String(window.{call})")).await?;
        let text = answer.as_str().unwrap_or_default().to_string();
        assert!(text.starts_with("usage:"), "{call} answered {answer}");
        assert!(!text.contains('\n'), "{call}: more than one line");
    }
    let after = s.wait_running(1).await?;
    assert_eq!(after["camera"], before["camera"], "the camera moved");
    assert_eq!(after["level"], before["level"]);
    assert_eq!(after["errors"], before["errors"]);
    let image_after = s.canvas().await?;
    assert_eq!(
        image_before.differing_pixels_saved(&image_after, "console"),
        0,
        "the picture changed"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(the_readme_s_hello_app_renders_and_survives_every_loss);
/// `examples/hello`, the README's app verbatim: it draws its triangle, comes back
/// identical after `matarGPU()` (on a new device: a stalled picture on the way is
/// drawn from a timer, never accepted frozen) and, on Chromium, after a GPU-process crash.
async fn the_readme_s_hello_app_renders_and_survives_every_loss(browser: Browser) -> TestResult {
    hello_survives_every_loss(browser, "hello/index.html").await
}

on_both!(the_readme_s_app_copied_into_an_empty_folder_works_the_first_time);
/// The same app as a stranger gets it: the README's four files copied into an
/// empty folder outside the workspace and built there by a plain `trunk build`
/// (`scripts/test` does both).
async fn the_readme_s_app_copied_into_an_empty_folder_works_the_first_time(
    browser: Browser,
) -> TestResult {
    hello_survives_every_loss(browser, "stranger/index.html").await
}

on_both!(a_wgpu_page_links_beside_the_guard_and_its_mistake_is_caught);
/// `examples/wgpu-page`: wgpu 30 (its WebGPU backend) and webgpu-guard without
/// its `web-sys-enums` feature in one wasm (the build itself is the first
/// proof: with the feature, wasm-bindgen refuses it). wgpu draws its clear
/// colour; the guard's `uncapturederror` listener on wgpu's device catches the
/// page's deliberate mistake, names its buffer, and the HTTP sink delivers it
/// to a real collector.
async fn a_wgpu_page_links_beside_the_guard_and_its_mistake_is_caught(
    browser: Browser,
) -> TestResult {
    let collector = webgpu_guard_harness::collector::Collector::start();
    let s = session(browser, Flags::WebGpu).await?;
    s.driver
        .goto(s.server.url(&format!(
            "wgpu-page/index.html?telemetry={}",
            collector.url()
        )))
        .await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = s
            .eval("return window.wgpuPageStatus ? window.wgpuPageStatus() : null")
            .await?;
        assert!(status["failure"].is_null(), "the page failed: {status}");
        if status["drawn"] == true
            && status["validation"].as_u64() == Some(1)
            && status["telemetryDelivered"].as_u64().unwrap_or(0) >= 1
        {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the page never got there: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let lines = status["lines"].to_string();
    assert!(lines.contains("deliberately-invalid"), "{status}");
    let bodies: String = collector
        .received()
        .iter()
        .map(|r| r.body.as_str())
        .collect();
    assert!(bodies.contains("deliberately-invalid"), "{bodies}");
    let image = s.element_image("canvas").await?;
    let [r, g, b, _] = image.pixel(image.width / 2, image.height / 2);
    let near = |value: u8, expected: u8| value.abs_diff(expected) <= 2;
    assert!(
        near(r, 26) && near(g, 153) && near(b, 77),
        "wgpu's clear colour is not on the canvas: {r} {g} {b}"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(the_wgpu_triangle_renders_and_survives_every_loss);
/// `examples/wgpu-triangle`, the README's app written with wgpu through
/// webgpu-guard-wgpu: the same triangle, back identical after `matarGPU()`
/// (a new adapter and device) and, on Chromium, after a GPU-process crash.
async fn the_wgpu_triangle_renders_and_survives_every_loss(browser: Browser) -> TestResult {
    hello_survives_every_loss(browser, "wgpu-triangle/index.html").await
}

on_both!(the_wgpu_life_board_survives_every_loss_through_its_snapshot);
/// `examples/wgpu-life`: a board stepped only on the GPU (compute, ping-pong
/// buffers) and carried across losses by webgpu-guard-wgpu's `GpuSnapshot`.
/// With `?still` it stops after 60 steps; once a snapshot of the stopped
/// board is taken, `matarGPU()` and, on Chromium, a GPU-process crash bring
/// back the identical picture (without the snapshot the board would start
/// over from its seed).
async fn the_wgpu_life_board_survives_every_loss_through_its_snapshot(
    browser: Browser,
) -> TestResult {
    let s = session(browser, Flags::WebGpuCrashes).await?;
    s.driver
        .goto(s.server.url("wgpu-life/index.html?still"))
        .await?;
    s.wait_running(1).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let life = s.eval("return window.lifeStatus()").await?;
        let paused = life["pausedAtFrame"].as_u64();
        let snapshot = life["snapshotFrame"].as_u64();
        if matches!((paused, snapshot), (Some(p), Some(f)) if f >= p) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no snapshot of the stopped board: {life}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = s.element_image("canvas").await?;
    let green = before.rgba.chunks(4).filter(|p| p[1] > 200).count();
    assert!(
        green > 1_000,
        "only {green} live pixels: the board is not drawn"
    );
    s.eval("window.matarGPU(); return true").await?;
    let (after, _) = s.wait_recovered(2).await?;
    let after_image = s.element_image("canvas").await?;
    assert_eq!(
        before.differing_pixels_saved(&after_image, "wgpu-life-matar"),
        0,
        "the board differs after matarGPU(): {after}"
    );
    if browser == Browser::Chromium {
        let generation = after["generation"].as_u64().unwrap_or(2);
        s.crash_gpu_process().await?;
        s.wait_recovered(generation + 1).await?;
        let crash_image = s.element_image("canvas").await?;
        assert_eq!(
            before.differing_pixels_saved(&crash_image, "wgpu-life-crash"),
            0,
            "the board differs after a GPU-process crash"
        );
    }
    let life = s.eval("return window.lifeStatus()").await?;
    assert_eq!(life["steps"], 60, "{life}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(the_readme_s_app_is_sharp_at_ratio_2_and_never_grows);
/// The README's canvas is sized by its attributes alone (no CSS): at a device
/// pixel ratio of 2 its buffer doubles once (480x360 CSS px, 960x720 px) and
/// stays there, instead of growing with each frame.
async fn the_readme_s_app_is_sharp_at_ratio_2_and_never_grows(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpuRatio2).await?;
    s.driver.goto(s.server.url("hello/index.html")).await?;
    s.wait_running(1).await?;
    let geometry = || async {
        s.eval(
            "const c = document.getElementById('canvas'); \
             return [c.clientWidth, c.clientHeight, c.width, c.height, devicePixelRatio];",
        )
        .await
    };
    let first = s.wait_geometry(json!([480, 360, 960, 720, 2])).await?;
    // Thirty frames later, it has not grown.
    s.wait_frames(30).await?;
    assert_eq!(geometry().await?, first);
    let status = s.status().await?;
    assert_eq!(status["generation"], 1, "{status}");
    assert!(num(&status, "resizes") <= 1, "{status}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

/// DevTools' device emulation at a scale of 2 (CDP
/// `Emulation.setDeviceMetricsOverride`): the engine reports the device-pixel
/// box in CSS pixels there, and the buffer must still be twice the CSS size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_s_app_is_sharp_under_devtools_device_emulation_at_scale_2() -> TestResult {
    let s = session(Browser::Chromium, Flags::WebGpu).await?;
    s.driver
        .cdp()
        .send_raw(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1024, "height": 768, "deviceScaleFactor": 2, "mobile": false}),
        )
        .await?;
    s.driver.goto(s.server.url("hello/index.html")).await?;
    s.wait_running(1).await?;
    s.wait_geometry(json!([480, 360, 960, 720, 2])).await?;
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

async fn hello_survives_every_loss(browser: Browser, page: &str) -> TestResult {
    let s = session(browser, Flags::WebGpuCrashes).await?;
    s.driver.goto(s.server.url(page)).await?;
    let before = s.wait_running(1).await?;
    let image_before = s.element_image("canvas").await?;
    let orange = image_before
        .rgba
        .chunks(4)
        .filter(|p| p[0] > 200 && p[1] > 100 && p[1] < 180 && p[2] < 60)
        .count();
    assert!(orange > 20_000, "the triangle covers only {orange} pixels");
    s.eval("window.matarGPU(); return true").await?;
    let after = s
        .wait_for("running on a new device with new frames", 60, |st| {
            st["state"] == "running"
                && st["generation"].as_u64().unwrap_or(0) >= 2
                && st["recoveries"].as_u64().unwrap_or(0) >= 1
        })
        .await?;
    let generation = after["generation"].as_u64().unwrap_or(2);
    let after = s.wait_running(generation).await?;
    assert_eq!(after["liveObjects"], before["liveObjects"], "{after}");
    assert_eq!(after["liveBytes"], before["liveBytes"], "{after}");
    let image_after = s.element_image("canvas").await?;
    assert_eq!(
        image_before.differing_pixels_saved(&image_after, "hello-matar"),
        0,
        "the triangle differs after matarGPU()"
    );
    if browser == Browser::Chromium {
        s.crash_gpu_process().await?;
        s.wait_for("a new device after the crash", 60, |st| {
            st["state"] == "running" && st["generation"].as_u64().unwrap_or(0) > generation
        })
        .await?;
        let crashed = s.status().await?["generation"].as_u64().unwrap_or(0);
        s.wait_running(crashed).await?;
        let image_crash = s.element_image("canvas").await?;
        assert_eq!(
            image_before.differing_pixels_saved(&image_crash, "hello-crash"),
            0,
            "the triangle differs after a GPU-process crash"
        );
    }
    let errors = s.status().await?["errors"].clone();
    assert_eq!(errors["validation"], 0, "{errors}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

/// The demo canvas's layout and drawing buffer: `[clientWidth, clientHeight,
/// width, height, devicePixelRatio, the stage's clientWidth]`.
async fn canvas_geometry(s: &Session) -> WebDriverResult<Vec<f64>> {
    let v = s
        .eval(
            "const c = document.getElementById('scene'); \
             const stage = document.getElementById('stage'); \
             return [c.clientWidth, c.clientHeight, c.width, c.height, devicePixelRatio, stage.clientWidth];",
        )
        .await?;
    Ok(v.as_array()
        .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(-1.0)).collect())
        .unwrap_or_default())
}

/// Waits until the drawing buffer is the displayed size times the ratio (to a
/// pixel: the engine may round a fractional CSS size either way), the canvas
/// fills its stage, and frames went on after it; returns the geometry.
async fn wait_sharp(s: &Session, what: &str) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let g = canvas_geometry(s).await?;
        let sharp = g.len() == 6
            && (g[2] - (g[0] * g[4]).round()).abs() <= 1.0
            && (g[3] - (g[1] * g[4]).round()).abs() <= 1.0
            && g[0] == g[5];
        if sharp {
            let frames = num(&s.status().await?, "frames");
            s.wait_for("frames at the new size", 30, |st| {
                num(st, "frames") > frames + 2
            })
            .await?;
            return Ok(g);
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the canvas is not sharp: {g:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

on_both!(the_demo_fills_its_stage_and_stays_sharp_at_every_size_and_ratio_2);
async fn the_demo_fills_its_stage_and_stays_sharp_at_every_size_and_ratio_2(
    browser: Browser,
) -> TestResult {
    let s = session(browser, Flags::WebGpuRatio2).await?;
    s.open("?still").await?;
    let before = s.wait_running(1).await?;
    let first = wait_sharp(&s, "at start").await?;
    assert_eq!(first[4], 2.0, "the page's devicePixelRatio: {first:?}");
    for (width, height) in [(900, 700), (1500, 1000), (700, 900), (1280, 1024)] {
        s.driver.set_window_rect(0, 0, width, height).await?;
        wait_sharp(&s, &format!("at {width}x{height}")).await?;
        let after = s.status().await?;
        assert_eq!(
            after["liveObjects"], before["liveObjects"],
            "at {width}x{height}: {after}"
        );
        assert_eq!(after["generation"], 1, "{after}");
    }
    // Back at the first size: the depth target is the size it was.
    assert_eq!(wait_sharp(&s, "back").await?[2..4], first[2..4]);
    assert_eq!(s.status().await?["liveBytes"], before["liveBytes"]);
    // A resize while the device is being rebuilt lands on the new device.
    s.eval("window.matarGPU(); return true").await?;
    s.driver.set_window_rect(0, 0, 1000, 800).await?;
    s.wait_for("running on a new device", 60, |st| {
        st["state"] == "running" && num(st, "generation") >= 2
    })
    .await?;
    wait_sharp(&s, "after matarGPU() and a resize").await?;
    let after = s.status().await?;
    assert_eq!(after["liveObjects"], before["liveObjects"], "{after}");
    s.driver.set_window_rect(0, 0, 1280, 1024).await?;
    assert_eq!(wait_sharp(&s, "back again").await?[2..4], first[2..4]);
    let after = s.status().await?;
    assert_eq!(after["liveBytes"], before["liveBytes"], "{after}");
    let errors = s.lines("error").await?;
    assert_eq!(after["errors"], before["errors"], "{after}: {errors:?}");
    assert!(errors.is_empty(), "error lines: {errors:?}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(a_canvas_whose_sizing_css_stops_applying_keeps_its_size_instead_of_growing);
/// The demo's canvas is sized by CSS. When that CSS stops applying (here a
/// media query of the page's that takes the size away in a narrow window),
/// the canvas is laid out at its drawing buffer's size, and following that at
/// a ratio of 2 would double it every frame up to the device's largest
/// texture. It keeps the size it had, sharp; and when the window widens and
/// the query no longer matches, it follows its CSS again.
async fn a_canvas_whose_sizing_css_stops_applying_keeps_its_size_instead_of_growing(
    browser: Browser,
) -> TestResult {
    let s = session(browser, Flags::WebGpuRatio2).await?;
    s.driver.set_window_rect(0, 0, 1024, 768).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    let first = wait_sharp(&s, "at start").await?;
    s.eval(
        "const style = document.createElement('style'); \
         style.textContent = '@media (max-width: 1100px) { #scene { width: auto; height: auto; } }'; \
         document.head.appendChild(style); return true",
    )
    .await?;
    s.wait_frames(30).await?;
    let after = canvas_geometry(&s).await?;
    assert_eq!(after[..5], first[..5], "it was {first:?}");
    // Wider: the query lets go, the CSS size applies again.
    s.driver.set_window_rect(0, 0, 1280, 1024).await?;
    let wide = wait_sharp(&s, "in a wide window").await?;
    assert!(wide[0] > first[0], "{wide:?} after {first:?}");
    let status = s.status().await?;
    assert_eq!(status["generation"], 1, "{status}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(a_canvas_bounded_by_max_width_fills_its_container_again_when_it_widens);
/// A canvas with no width of its own, bounded by `max-width: 100%`, is laid
/// out at its drawing buffer's size until its container stops it: at a ratio
/// of 2 it fills the container. Narrowed, then widened a lot, it fills the
/// container again; a side that a maximum size bounds is never taken for
/// one whose CSS let go (which would pin it at the narrow size).
async fn a_canvas_bounded_by_max_width_fills_its_container_again_when_it_widens(
    browser: Browser,
) -> TestResult {
    let s = session(browser, Flags::WebGpuRatio2).await?;
    s.driver.set_window_rect(0, 0, 1600, 1000).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    wait_sharp(&s, "at start").await?;
    s.eval(
        "const c = document.getElementById('scene'); \
         c.style.width = 'auto'; c.style.maxWidth = '100%'; \
         document.getElementById('stage').style.flex = '0 0 300px'; return true",
    )
    .await?;
    let narrow = wait_sharp(&s, "in a narrow container").await?;
    assert_eq!(narrow[0], 300.0, "{narrow:?}");
    s.eval("document.getElementById('stage').style.flex = '0 0 1250px'; return true")
        .await?;
    let wide = wait_sharp(&s, "in a wide container").await?;
    assert_eq!(wide[0], 1250.0, "{wide:?}");
    let status = s.status().await?;
    assert_eq!(status["generation"], 1, "{status}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(the_demo_s_canvas_keeps_its_size_while_the_panels_fill_up);
/// A storm fills the HUD and the console panel: the canvas's layout must not
/// move (each shift would rebuild the size-dependent targets).
async fn the_demo_s_canvas_keeps_its_size_while_the_panels_fill_up(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpu).await?;
    s.driver.set_window_rect(0, 0, 1024, 768).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    let first = wait_sharp(&s, "at start").await?;
    let resizes = num(&s.status().await?, "resizes");
    s.driver.find(By::Id("btn-storm")).await?.click().await?;
    for _ in 0..6 {
        s.driver
            .find(By::Id("btn-validation"))
            .await?
            .click()
            .await?;
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    s.driver.find(By::Id("btn-stop")).await?.click().await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = canvas_geometry(&s).await?;
    assert_eq!(
        after[..4],
        first[..4],
        "the canvas moved: {first:?} -> {after:?}"
    );
    let status = s.status().await?;
    assert_eq!(num(&status, "resizes"), resizes, "{status}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(gpu_only_data_is_recomputed_after_matar_and_after_a_crash);
async fn gpu_only_data_is_recomputed_after_matar_and_after_a_crash(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpuCrashes).await?;
    s.driver.goto(s.server.url("particles/index.html")).await?;
    let before = s.wait_running(1).await?;
    let image_before = s.element_image("canvas").await?;
    let lit = image_before
        .rgba
        .chunks(4)
        .filter(|p| p[0] > 60 || p[1] > 60 || p[2] > 60)
        .count();
    assert!(lit > 10_000, "the compute pass drew only {lit} pixels");
    s.eval("window.matarGPU(); return true").await?;
    let (after, stalls) = s.wait_recovered(2).await?;
    eprintln!(
        "{}: particles recovered with {} stall line(s)",
        browser.name(),
        stalls.len()
    );
    assert_eq!(after["liveBytes"], before["liveBytes"]);
    let image_after = s.element_image("canvas").await?;
    assert_eq!(
        image_before.differing_pixels_saved(&image_after, "particles-matar"),
        0,
        "the recomputed field differs after matarGPU()"
    );
    if browser == Browser::Firefox {
        // No CDP in Firefox, and no page-side way to crash its GPU process: the
        // requested recovery above is the nearest real fault there.
        s.assert_no_page_errors().await?;
        return s.quit().await.map_err(Into::into);
    }
    s.crash_gpu_process().await?;
    s.wait_running(after["generation"].as_u64().unwrap_or(2) + 1)
        .await?;
    let image_crash = s.element_image("canvas").await?;
    assert_eq!(
        image_before.differing_pixels_saved(&image_crash, "particles-crash"),
        0,
        "the recomputed field differs after a GPU-process crash"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(mata_gpu_recovers_the_identical_picture);
async fn mata_gpu_recovers_the_identical_picture(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpu).await?;
    s.open("?still").await?;
    let before = s.wait_running(1).await?;
    let image_before = s.canvas().await?;
    s.eval("window.matarGPU(); return true").await?;
    let (after, stalls) = s.wait_recovered(2).await?;
    eprintln!(
        "{}: the demo recovered with {} stall line(s)",
        browser.name(),
        stalls.len()
    );
    let image_after = s.canvas().await?;
    if stalls.is_empty() {
        assert_eq!(after["recoveries"], 1);
        assert_eq!(after["lastLoss"]["reason"], "destroyed");
        assert_eq!(after["lastLoss"]["requested"], true);
    } else {
        // The stall was handled on the same device (frames from a timer), and
        // said so once for each of its two steps.
        assert!(stalls.len() <= 2, "{stalls:?}");
        assert_eq!(after["stalled"], false, "{after}");
    }
    assert_eq!(after["liveObjects"], before["liveObjects"]);
    assert_eq!(after["liveBytes"], before["liveBytes"]);
    assert_eq!(
        image_before.differing_pixels_saved(&image_after, "mata"),
        0,
        "the picture after recovery differs from the one before"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

/// `gpuStatus().lastLoss.message` after a real loss carries what the browser
/// (or the probe that found it) said, not a bare "device N lost".
fn assert_browser_said_why(status: &Value) {
    let message = status["lastLoss"]["message"].as_str().unwrap_or_default();
    let bare = message.starts_with("device ") && message.ends_with(" lost");
    assert!(!message.is_empty() && !bare, "lastLoss.message: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_process_crashes_recover_ten_times_in_a_row() -> TestResult {
    let s = session(Browser::Chromium, Flags::WebGpuCrashes).await?;
    // Ten quick crashes are a crash loop by the default limits: turned off here.
    // Every frame scoped: the frame's pops reject when the GPU process dies,
    // and that is the loss, never a misused scope stack.
    s.open("?still&crashwindow=0&sampling=1").await?;
    let before = s.wait_running(1).await?;
    let image_before = s.canvas().await?;
    for n in 1..=10u64 {
        s.crash_gpu_process().await?;
        let after = s.wait_running(n + 1).await?;
        assert_eq!(after["recoveries"], n);
        assert_eq!(after["lastLoss"]["reason"], "unknown", "{after}");
        assert_eq!(after["lastLoss"]["requested"], false);
        assert_browser_said_why(&after);
        assert_eq!(after["liveObjects"], before["liveObjects"]);
        assert_eq!(after["liveBytes"], before["liveBytes"]);
        if n == 1 || n == 10 {
            let image_after = s.canvas().await?;
            assert_eq!(
                image_before.differing_pixels(&image_after),
                0,
                "crash {n}: picture differs"
            );
        }
        assert_eq!(after["scopeStackFaults"], 0, "crash {n}: {after}");
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let settled = s.status().await?;
    assert_eq!(settled["scopeStackFaults"], 0, "{settled}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wgpu_triangle_recovers_ten_gpu_process_crashes_in_a_row() -> TestResult {
    let s = session(Browser::Chromium, Flags::WebGpuCrashes).await?;
    // Ten quick crashes are a crash loop by the default limits: turned off here.
    s.driver
        .goto(s.server.url("wgpu-triangle/index.html?crashwindow=0"))
        .await?;
    let before = s.wait_running(1).await?;
    let image_before = s.element_image("canvas").await?;
    for n in 1..=10u64 {
        s.crash_gpu_process().await?;
        let after = s.wait_running(n + 1).await?;
        assert_eq!(after["recoveries"], n, "{after}");
        assert_eq!(after["lastLoss"]["reason"], "unknown", "{after}");
        assert_eq!(after["lastLoss"]["requested"], false, "{after}");
        assert_eq!(after["liveObjects"], before["liveObjects"], "{after}");
        if n == 1 || n == 10 {
            let image_after = s.element_image("canvas").await?;
            assert_eq!(
                image_before.differing_pixels_saved(&image_after, &format!("wgpu-crash-{n}")),
                0,
                "crash {n}: the triangle differs"
            );
        }
    }
    let status = s.status().await?;
    assert_eq!(status["errors"]["validation"], 0, "{status}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

/// Firefox's GPU process killed for real (SIGKILL of the `-contentproc ...
/// gpu` child of the Firefox this test started, headful under Xvfb with the
/// GPU process forced on), ten times, each recovered with the identical picture
/// and frames that keep coming for ten seconds; then the README's app
/// recovering from one. One kill a browser: Firefox ESR 153 starts no new GPU
/// process after one was killed (WebGPU goes on without one; measured: none
/// within 36 s, nor after a resize and a new device), so a second kill in the
/// same browser has nothing to kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn firefox_gpu_process_killed_ten_times_recovers_and_keeps_drawing() -> TestResult {
    let mut image_first: Option<Image> = None;
    for n in 1..=10u64 {
        let s = session(Browser::Firefox, Flags::FirefoxGpuProcess).await?;
        s.open("?still").await?;
        let before = s.wait_running(1).await?;
        let image_before = s.canvas().await?;
        if let Some(first) = &image_first {
            assert_eq!(
                first.differing_pixels(&image_before),
                0,
                "run {n}: the start differs"
            );
        }
        let started = Instant::now();
        let pid = s.driver_process.kill_gpu_process()?;
        let (after, stalls) = s.wait_recovered(2).await?;
        eprintln!(
            "firefox: GPU process {pid} killed ({n}): frames again after {} ms, {} stall line(s), frames from a timer: {}",
            started.elapsed().as_millis(),
            stalls.len(),
            after["framesFromTimer"]
        );
        let generation = after["generation"].as_u64().unwrap_or(2);
        assert_eq!(after["lastLoss"]["reason"], "unknown", "{after}");
        assert_eq!(after["lastLoss"]["requested"], false, "{after}");
        assert_browser_said_why(&after);
        assert_eq!(after["liveObjects"], before["liveObjects"], "{after}");
        assert_eq!(after["liveBytes"], before["liveBytes"], "{after}");
        let image_after = s.canvas().await?;
        assert_eq!(
            image_before.differing_pixels_saved(&image_after, "firefox-gpu-kill"),
            0,
            "kill {n}: the picture differs"
        );
        // Frames keep coming, on this device, for ten seconds.
        let frames = num(&after, "frames");
        tokio::time::sleep(Duration::from_secs(10)).await;
        let later = s.status().await?;
        assert_eq!(later["state"], "running", "kill {n}: {later}");
        assert_eq!(
            later["generation"].as_u64(),
            Some(generation),
            "kill {n}: {later}"
        );
        assert!(
            num(&later, "frames") >= frames + 100,
            "kill {n}: {} frames in ten seconds: {later}",
            num(&later, "frames") - frames
        );
        assert!(later["fallback"].is_null(), "kill {n}: {later}");
        image_first.get_or_insert(image_before);
        s.quit().await?;
    }

    let s = session(Browser::Firefox, Flags::FirefoxGpuProcess).await?;
    s.driver.goto(s.server.url("hello/index.html")).await?;
    let before = s.wait_running(1).await?;
    let image_before = s.element_image("canvas").await?;
    s.driver_process.kill_gpu_process()?;
    let (after, _) = s.wait_recovered(2).await?;
    assert_eq!(after["liveObjects"], before["liveObjects"], "{after}");
    let image_after = s.element_image("canvas").await?;
    assert_eq!(
        image_before.differing_pixels_saved(&image_after, "firefox-gpu-kill-hello"),
        0,
        "the README's app differs after its GPU process was killed"
    );
    s.quit().await?;
    Ok(())
}

/// The wgpu front on Firefox whose GPU process is killed (headful under Xvfb,
/// as for the demo): wgpu's device is lost, a new adapter and device are made,
/// and the triangle comes back identical, its frames coming again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wgpu_triangle_recovers_when_firefox_s_gpu_process_is_killed() -> TestResult {
    let s = session(Browser::Firefox, Flags::FirefoxGpuProcess).await?;
    s.driver
        .goto(s.server.url("wgpu-triangle/index.html"))
        .await?;
    s.wait_running(1).await?;
    let image_before = s.element_image("canvas").await?;
    s.driver_process.kill_gpu_process()?;
    let (after, _) = s.wait_recovered(2).await?;
    let image_after = s.element_image("canvas").await?;
    assert_eq!(
        image_before.differing_pixels_saved(&image_after, "firefox-gpu-kill-wgpu-triangle"),
        0,
        "the wgpu triangle differs after its GPU process was killed: {after}"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebuilt_devices_that_keep_crashing_end_in_the_crash_loop_fallback() -> TestResult {
    let s = session(Browser::Chromium, Flags::WebGpuCrashes).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    // The first device's death does not count; then three rebuilt devices die
    // within 10 s of their first frame.
    for n in 1..=3u64 {
        s.crash_gpu_process().await?;
        s.wait_running(n + 1).await?;
    }
    s.crash_gpu_process().await?;
    let failed = s
        .wait_for("crash-loop fallback", 30, |st| st["state"] == "failed")
        .await?;
    assert_eq!(failed["fallback"], "crash-loop", "{failed}");
    let text = s.driver.find(By::Id("fallback")).await?.text().await?;
    assert!(text.contains("keeps failing"), "fallback text: {text}");
    assert_eq!(failed["loopAlive"], false);
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_right_after_a_crash_wins_over_the_recovery() -> TestResult {
    let s = session(Browser::Chromium, Flags::WebGpuCrashes).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    s.crash_gpu_process().await?;
    s.wait_for("the loss", 30, |st| st["state"] != "running")
        .await?;
    s.eval("window.gpuStop(); return true").await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let st = s.status().await?;
    assert_eq!(st["state"], "stopped", "{st}");
    assert_eq!(st["loopAlive"], false, "{st}");
    assert_eq!(st["liveObjects"], 0, "{st}");
    let frames = num(&st, "frames");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(num(&s.status().await?, "frames"), frames);
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_flags_second_crash_ends_in_the_reload_fallback() -> TestResult {
    let s = session(Browser::Chromium, Flags::WebGpu).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    s.crash_gpu_process().await?;
    // The first crash may recover or already be blocked, depending on the browser's
    // crash accounting; the second one must end in the fallback.
    let first = s
        .wait_for("first crash handled", 30, |st| {
            (st["state"] == "running" && num(st, "generation") == 2) || st["state"] == "failed"
        })
        .await?;
    if first["state"] == "running" {
        s.wait_running(2).await?;
        s.crash_gpu_process().await?;
    }
    let failed = s
        .wait_for("fallback", 60, |st| st["state"] == "failed")
        .await?;
    assert_eq!(failed["fallback"], "blocked", "{failed}");
    let text = s.driver.find(By::Id("fallback")).await?.text().await?;
    assert!(text.contains("Reload the page"), "fallback text: {text}");
    assert_eq!(failed["loopAlive"], false);
    let frames = num(&failed, "frames");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        num(&s.status().await?, "frames"),
        frames,
        "frames still drawn after giving up"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(fault_buttons_show_in_the_hud_and_the_console);
async fn fault_buttons_show_in_the_hud_and_the_console(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpu).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;

    s.driver
        .find(By::Id("btn-validation"))
        .await?
        .click()
        .await?;
    let st = s
        .wait_for("validation error counted", 10, |st| {
            num(&st["errors"], "validation") >= 1
        })
        .await?;
    assert!(num(&st, "logged") >= 1);
    let errors = s.lines("error").await?;
    // The call was raw, outside the allocator: only the engine can name the
    // buffer, and only Dawn quotes labels.
    assert!(
        errors.iter().any(|l| l.contains("validation")
            && (browser == Browser::Firefox || l.contains("injected-invalid-buffer"))),
        "{errors:?}"
    );
    s.wait_text("hud", "validation 1", 10).await?;

    s.driver.find(By::Id("btn-oom")).await?.click().await?;
    s.wait_for("out-of-memory counted", 10, |st| {
        num(&st["errors"], "outOfMemory") >= 1
    })
    .await?;

    s.wait_text("hud", "oom 1", 10).await?;
    let errors = s.lines("error").await?;
    assert!(
        errors.iter().any(|l| l.contains("out-of-memory")
            && (browser == Browser::Firefox || l.contains("injected-oom-texture"))),
        "{errors:?}"
    );

    s.driver.find(By::Id("btn-shader")).await?.click().await?;
    s.wait_for("shader error counted", 10, |st| {
        num(&st["errors"], "validation") >= 2
    })
    .await?;
    let panel = s
        .wait_text("diagnostics", "injected-bad-shader:4:", 10)
        .await?;
    assert!(panel.contains("injected-bad-shader:4:"), "{panel}");
    assert!(panel.contains('^'), "{panel}");
    let errors = s.lines("error").await?;
    assert!(
        errors
            .iter()
            .any(|l| l.contains("on \"injected-bad-shader\"")
                && l.contains("injected-bad-shader:4:")),
        "{errors:?}"
    );

    let before = s.status().await?;
    s.driver.find(By::Id("btn-storm")).await?.click().await?;
    let storm = s
        .wait_for("storm held back", 20, |st| {
            num(st, "suppressed") >= num(&before, "suppressed") + 20
                && num(st, "heldByListener") >= num(&before, "heldByListener") + 10
        })
        .await?;
    s.driver.find(By::Id("btn-stop")).await?.click().await?;
    let lines = num(&storm, "logged") - num(&before, "logged");
    assert!(lines >= 1, "the storm wrote nothing");
    let errors = s.lines("error").await?;
    assert!(
        errors.iter().any(|l| l.contains("silencing the rest")),
        "no cut-off line"
    );
    assert!(
        errors.iter().any(|l| l.contains("multiple of 4")
            || l.contains("multiple of `COPY")
            || l.contains("not aligned to block size or `COPY_BUFFER_ALIGNMENT`")),
        "{errors:?}"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(without_webgpu_the_readme_s_app_shows_the_fallback_in_place_of_its_canvas);
/// The README's app sets no fallback hook: the runtime's default shows the
/// message, readable, where the canvas was.
async fn without_webgpu_the_readme_s_app_shows_the_fallback_in_place_of_its_canvas(
    browser: Browser,
) -> TestResult {
    let s = session(browser, Flags::NoWebGpu).await?;
    s.driver.goto(s.server.url("hello/index.html")).await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let panel = loop {
        if let Ok(panel) = s.driver.find(By::ClassName("webgpu-guard-fallback")).await {
            break panel;
        }
        assert!(Instant::now() < deadline, "no fallback in the page");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(panel.is_displayed().await?);
    let text = panel.text().await?;
    assert!(text.contains("WebGPU"), "{text}");
    let canvas = s.driver.find(By::Tag("canvas")).await?;
    assert!(
        !canvas.is_displayed().await?,
        "the blank canvas is still shown"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(without_webgpu_the_page_shows_a_readable_fallback);
async fn without_webgpu_the_page_shows_a_readable_fallback(browser: Browser) -> TestResult {
    let s = session(browser, Flags::NoWebGpu).await?;
    s.open("").await?;
    let status = s
        .wait_for("fallback", 30, |st| st["state"] == "failed")
        .await?;
    let reason = status["fallback"].as_str().unwrap_or_default().to_string();
    match browser {
        // Chromium without its WebGPU flags: no API, or no adapter, by platform.
        Browser::Chromium => assert!(reason == "no-webgpu" || reason == "no-adapter", "{status}"),
        // Firefox without `dom.webgpu.enabled`: no `navigator.gpu`.
        Browser::Firefox => assert_eq!(reason, "no-webgpu", "{status}"),
    }
    let panel = s.driver.find(By::Id("fallback")).await?;
    assert!(panel.is_displayed().await?);
    let text = panel.text().await?;
    assert!(text.contains("WebGPU"), "{text}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

impl Session {
    /// The most library lines (`[webgpu-guard]`, every level) written in any one
    /// second so far.
    async fn max_lines_in_a_second(&self) -> WebDriverResult<usize> {
        let times: Vec<f64> = if self.browser == Browser::Firefox {
            let lines: Vec<Instant> = ["error", "warn", "info"]
                .iter()
                .flat_map(|level| self.firefox_lines(level))
                .filter(|(_, text)| !text.contains("giving up: "))
                .map(|(at, _)| at)
                .collect();
            let Some(first) = lines.iter().min().copied() else {
                return Ok(0);
            };
            lines
                .iter()
                .map(|at| at.duration_since(first).as_secs_f64() * 1000.0)
                .collect()
        } else {
            let v = self.eval("return window.__lineTimes").await?;
            v.as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default()
        };
        let mut sorted = times;
        sorted.sort_by(f64::total_cmp);
        let mut most = 0;
        let mut start = 0;
        for end in 0..sorted.len() {
            while sorted[end] - sorted[start] >= 1000.0 {
                start += 1;
            }
            most = most.max(end - start + 1);
        }
        Ok(most)
    }

    /// [`Self::max_lines_in_a_second`] on Chromium; 0 on Firefox, whose console
    /// reaches the test in batches, without times.
    async fn max_lines_in_a_second_on_chromium(&self) -> WebDriverResult<usize> {
        if self.browser == Browser::Chromium {
            self.max_lines_in_a_second().await
        } else {
            Ok(0)
        }
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

on_both!(gpu_chaos_runs_a_seeded_sequence_in_the_page);
async fn gpu_chaos_runs_a_seeded_sequence_in_the_page(browser: Browser) -> TestResult {
    let s = session(browser, Flags::WebGpu).await?;
    s.open("?still&crashwindow=0").await?;
    s.wait_running(1).await?;
    // The page runs the whole sequence before it answers.
    s.driver
        .set_script_timeout(Duration::from_secs(300))
        .await?;
    let usage = s.eval("return window.gpuChaos('x', 3)").await?;
    assert!(
        usage.as_str().unwrap_or_default().contains("usage:"),
        "{usage}"
    );
    let report = s.eval("return window.gpuChaos(7, 8)").await?;
    assert_eq!(report["steps"], 8, "{report}");
    assert_eq!(report["failures"], json!([]), "{report}");
    let counted: u64 = report["byKind"]
        .as_object()
        .map(|kinds| kinds.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0);
    assert_eq!(counted, 8, "{report}");
    let st = s
        .wait_running(num(&s.status().await?, "generation"))
        .await?;
    assert_eq!(st["state"], "running");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(soak_of_random_faults_loses_nothing);
/// A seeded sequence of random faults (`SOAK_SEED`, default 2026; `SOAK_FAULTS`,
/// default 100), on Chromium with real GPU-process crashes at seeded delays mixed
/// in. After every fault: running again (after a documented fallback, restarted),
/// the picture equal to the baseline, live objects and bytes back at the
/// baseline, the scope stack balanced, no page error; at most 6 library lines in
/// any second (5 and the cut-off line; the line of a runtime giving up, which
/// no limit holds back, aside). A failure names the seed and the step: the
/// same seed replays it.
async fn soak_of_random_faults_loses_nothing(browser: Browser) -> TestResult {
    let seed = env_number("SOAK_SEED", 2026);
    let count = env_number("SOAK_FAULTS", 100) as u32;
    let flags = if browser == Browser::Chromium {
        Flags::WebGpuCrashes
    } else {
        Flags::WebGpu
    };
    let s = session(browser, flags).await?;
    s.open("?still&crashwindow=0").await?;
    let base = s.wait_running(1).await?;
    let picture = s.canvas().await?;
    let mut plan = webgpu_guard::chaos::ChaosPlan::new(seed, 30);
    let mut tally: std::collections::BTreeMap<String, u32> = Default::default();
    let mut fallbacks: std::collections::BTreeMap<String, u32> = Default::default();
    let mut degraded = 0;
    let mut most_console_lines = 0;
    let mut halfway = None;
    for step in 0..count {
        let injection = plan.next_injection();
        let crash = browser == Browser::Chromium && step % 7 == 3;
        let what = if crash {
            "gpu-process-crash".to_string()
        } else {
            injection.to_string()
        };
        let at = format!(
            "seed {seed}, step {step} ({what}) on {}; replay with SOAK_SEED={seed}",
            browser.name()
        );
        *tally
            .entry(if crash {
                what.clone()
            } else {
                injection.kind().to_string()
            })
            .or_default() += 1;
        let before = s.status().await?;
        let generation = num(&before, "generation");
        if crash {
            // A seeded delay after the previous fault settled: 0 to 400 ms.
            let delay = (seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(u64::from(step))
                >> 40)
                % 400;
            tokio::time::sleep(Duration::from_millis(delay)).await;
            s.crash_gpu_process().await?;
        } else {
            let answer = s
                .eval(&format!("return String(window.gpuInject('{injection}'))"))
                .await?;
            assert_eq!(answer, "true", "{at}: {answer}");
        }
        if let webgpu_guard::chaos::Injection::Storm { for_ms, .. } = injection {
            if !crash {
                tokio::time::sleep(Duration::from_millis(u64::from(for_ms) + 100)).await;
            }
        }
        if injection == webgpu_guard::chaos::Injection::BadShader && !crash {
            // The module compiles asynchronously: done once its error is counted.
            let validation = num(&before["errors"], "validation");
            s.wait_for("the bad shader's error", 30, |st| {
                num(&st["errors"], "validation") > validation
            })
            .await?;
        }
        // Settled: running with new frames, after a restart if it fell back.
        let deadline = Instant::now() + Duration::from_secs(60);
        let settled = loop {
            let st = s.status().await?;
            if st["state"] == "failed" {
                let code = st["fallback"].as_str().unwrap_or("?").to_string();
                assert!(
                    ["init-failed", "gave-up"].contains(&code.as_str()),
                    "{at}: undocumented fallback {st}"
                );
                *fallbacks.entry(code).or_default() += 1;
                s.eval("window.gpuStart(); return true").await?;
            } else if st["state"] == "running"
                && (!injection.loses_the_device() && !crash || num(&st, "generation") > generation)
            {
                let frames = num(&st, "frames");
                tokio::time::sleep(Duration::from_millis(150)).await;
                let later = s.status().await?;
                if later["state"] == "running" && num(&later, "frames") >= frames + 2 {
                    break later;
                }
            }
            assert!(Instant::now() < deadline, "{at}: never settled: {st}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(
            settled["liveObjects"], base["liveObjects"],
            "{at}: {settled}"
        );
        // The runtime never found its own state lent where it should not be.
        assert_eq!(settled["runtimeBugs"], 0, "{at}: {settled}");
        if settled["shadowMapSize"] == base["shadowMapSize"] {
            assert_eq!(settled["liveBytes"], base["liveBytes"], "{at}: {settled}");
            let now = s.canvas().await?;
            assert_eq!(
                picture.differing_pixels_saved(&now, &format!("soak-{}", browser.name())),
                0,
                "{at}: the picture differs"
            );
        } else {
            // The injected out-of-memory hit the shadow map: the ladder degraded
            // (documented); the next rebuild gets the full size again.
            degraded += 1;
        }
        let balanced = s.eval("return window.gpuScopeCheck()").await?;
        assert_eq!(balanced, true, "{at}: the scope stack is not balanced");
        let errors = s.page_errors().await?;
        assert!(errors.is_empty(), "{at}: page errors {errors:?}");
        if step + 1 == count / 2 {
            // Reading the memory lets the console's lines go: count them first.
            most_console_lines = s.max_lines_in_a_second_on_chromium().await?;
            halfway = Some(s.memory().await?);
        }
    }
    // What the library wrote, by its own clock; on Chromium also by the page's
    // console (Firefox's console reaches the test in batches, without times).
    let written = num(&s.status().await?, "maxLinesInASecond") as usize;
    let most = s
        .max_lines_in_a_second_on_chromium()
        .await?
        .max(most_console_lines)
        .max(written);
    let end = s.memory().await?;
    let second_half = u64::from(count - count / 2).max(1) as f64;
    let memory = match halfway {
        Some(halfway) => {
            let heap = match (halfway.js_heap, end.js_heap) {
                (Some(a), Some(b)) => format!("{:.0} B", (b - a) / second_half),
                _ => "not exposed".to_string(),
            };
            assert!(
                end.wasm - halfway.wasm <= 65536.0,
                "the wasm memory grew by {} B over the second half of the faults",
                end.wasm - halfway.wasm
            );
            format!(
                "per fault over the second half: wasm memory {:.0} B, JavaScript heap {heap}",
                (end.wasm - halfway.wasm) / second_half
            )
        }
        None => "too few faults to measure the memory".to_string(),
    };
    eprintln!(
        "soak on {}: seed {seed}, {count} faults {tally:?}; fallbacks restarted {fallbacks:?}; ladder degraded {degraded}; at most {most} lines in a second; {memory}",
        browser.name()
    );
    assert!(most <= 6, "{most} library lines in one second");
    s.quit().await?;
    Ok(())
}

/// Firefox with `dom.webgpu.enabled` but without `gfx.webgpu.ignore-blocklist`:
/// `requestAdapter()` resolves null.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn firefox_without_an_adapter_shows_the_no_adapter_fallback() -> TestResult {
    let s = session(Browser::Firefox, Flags::NoAdapter).await?;
    s.open("").await?;
    let status = s
        .wait_for("fallback", 30, |st| st["state"] == "failed")
        .await?;
    assert_eq!(status["fallback"], "no-adapter", "{status}");
    let text = s.driver.find(By::Id("fallback")).await?.text().await?;
    assert!(text.contains("adapter"), "{text}");
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/demo.png; run by scripts/screenshot"]
async fn readme_screenshot() -> TestResult {
    let s = session(Browser::Chromium, Flags::WebGpu).await?;
    s.open("?still").await?;
    s.wait_running(1).await?;
    s.driver.find(By::Id("btn-shader")).await?.click().await?;
    s.driver
        .find(By::Id("btn-validation"))
        .await?
        .click()
        .await?;
    s.wait_for("diagnostics shown", 30, |st| {
        num(&st["errors"], "validation") >= 2
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let png = s.driver.screenshot_as_png().await?;
    std::fs::create_dir_all(root().join("docs"))?;
    std::fs::write(root().join("docs").join("demo.png"), png)?;
    s.quit().await?;
    Ok(())
}

/// The memory figures of the page after a collection: the JavaScript heap where
/// the engine lets a test collect and read it (Chromium, through CDP), and the
/// wasm linear memory (both engines).
#[derive(Clone, Copy, Debug)]
struct Memory {
    js_heap: Option<f64>,
    wasm: f64,
}

impl Session {
    /// Collects garbage twice and reads the heap. The console's own copies of
    /// the lines (the test's capture and DevTools' entries) are let go first:
    /// they are the harness's, not the page's.
    async fn memory(&self) -> WebDriverResult<Memory> {
        let js_heap = if self.browser == Browser::Chromium {
            self.eval(
                "for (const k in window.__lines) window.__lines[k].length = 0; \
                 window.__lineTimes.length = 0; return true",
            )
            .await?;
            let cdp = self.driver.cdp();
            cdp.send_raw("Runtime.discardConsoleEntries", json!({}))
                .await?;
            cdp.send_raw("HeapProfiler.collectGarbage", json!({}))
                .await?;
            cdp.send_raw("HeapProfiler.collectGarbage", json!({}))
                .await?;
            let usage = cdp.send_raw("Runtime.getHeapUsage", json!({})).await?;
            usage["usedSize"].as_f64()
        } else {
            None
        };
        let status = self.status().await?;
        let Some(wasm) = status["wasmMemoryBytes"].as_f64() else {
            panic!("gpuStatus() has no wasmMemoryBytes: {status}");
        };
        Ok(Memory { js_heap, wasm })
    }

    /// `count` recoveries in a row, driven by the page itself (one script for
    /// all of them: every WebDriver script leaves its result in the page's heap
    /// for a while, which would be counted as the page's own growth). Each is
    /// done once the next device has drawn two frames with the live objects and
    /// bytes of `base`; returns "ok" or what went wrong.
    async fn recover_in_the_page(&self, count: u64, base: &Value) -> WebDriverResult<String> {
        self.driver
            .set_script_timeout(Duration::from_secs(60 + count * 10))
            .await?;
        let answer = self
            .driver
            .execute_async(
                r#"
                const [count, objects, bytes, done] = arguments;
                const sleep = ms => new Promise(r => setTimeout(r, ms));
                (async () => {
                  for (let n = 1; n <= count; n++) {
                    const generation = window.gpuStatus().generation;
                    window.matarGPU();
                    const deadline = performance.now() + 60000;
                    let frames = null;
                    for (;;) {
                      await sleep(20);
                      const st = window.gpuStatus();
                      if (performance.now() > deadline) return 'recovery ' + n + ' never drew: ' + JSON.stringify(st);
                      if (st.state !== 'running' || st.generation <= generation) continue;
                      if (frames === null) frames = st.frames;
                      if (st.frames < frames + 2) continue;
                      if (st.liveObjects !== objects || st.liveBytes !== bytes)
                        return 'recovery ' + n + ' changed the live objects: ' + JSON.stringify(st);
                      break;
                    }
                  }
                  return 'ok';
                })().then(done, e => done('threw: ' + e));
                "#,
                vec![json!(count), base["liveObjects"].clone(), base["liveBytes"].clone()],
            )
            .await?;
        Ok(answer.json().as_str().unwrap_or("not a string").to_string())
    }
}

/// The most the JavaScript heap may grow per recovery from the 100th to the
/// 200th, in bytes.
const HEAP_BOUND_PER_RECOVERY: f64 = 512.0;

on_both!(two_hundred_recoveries_leave_the_memory_where_it_was);
async fn two_hundred_recoveries_leave_the_memory_where_it_was(browser: Browser) -> TestResult {
    let total = env_number("RECOVERIES", 200).max(4);
    let half = total / 2;
    let s = session(browser, Flags::WebGpuSteadyHeap).await?;
    s.open("?still").await?;
    let base = s.wait_running(1).await?;
    let mut marks: Vec<(u64, Memory)> = vec![(0, s.memory().await?)];
    let started = Instant::now();
    let mut done = 0;
    for mark in [total / 8, half, total] {
        let answer = s.recover_in_the_page(mark - done, &base).await?;
        assert_eq!(answer, "ok", "after {done} recoveries");
        done = mark;
        marks.push((mark, s.memory().await?));
    }
    let seconds = started.elapsed().as_secs_f64();
    let (middle, end) = (marks[2].1, marks[3].1);
    let per = |a: f64, b: f64| (b - a) / (total - half) as f64;
    eprintln!(
        "{}: {total} recoveries in {seconds:.0} s; memory at each mark {marks:?}",
        browser.name()
    );
    let wasm_per = per(middle.wasm, end.wasm);
    eprintln!(
        "{}: wasm memory {wasm_per:.0} B per recovery from {half} to {total}",
        browser.name()
    );
    // Linear memory grows in 64 KiB pages: at most one page over the second half.
    assert!(
        end.wasm - middle.wasm <= 65536.0,
        "wasm memory grew {wasm_per:.0} B per recovery"
    );
    if let (Some(a), Some(b)) = (middle.js_heap, end.js_heap) {
        let heap_per = per(a, b);
        eprintln!(
            "{}: JavaScript heap {heap_per:.0} B per recovery from {half} to {total}",
            browser.name()
        );
        // What remains is the engine warming up (compiled code, feedback), and it
        // decays: measured 275 B per recovery from 100 to 200 and 102 B from 200
        // to 400 on Chromium. One JavaScript string of 600 characters kept per
        // recovery fails this bound (seen failing); the seeds' plain JavaScript
        // recovery keeps 490 B per recovery in the console's lines.
        assert!(
            heap_per <= HEAP_BOUND_PER_RECOVERY,
            "the JavaScript heap grew {heap_per:.0} B per recovery from {half} to {total}"
        );
    }
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

impl Session {
    /// The demo's `gpuTelemetry()`: the HTTP sink's counters.
    async fn telemetry(&self) -> WebDriverResult<Value> {
        self.eval("return window.gpuTelemetry ? window.gpuTelemetry() : null")
            .await
    }

    /// Waits until the HTTP sink holds nothing (nothing pending, nothing in
    /// flight); returns its counters.
    async fn telemetry_settled(&self, secs: u64) -> WebDriverResult<Value> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let t = self.telemetry().await?;
            if num(&t, "pending") == 0 && num(&t, "inFlight") == 0 {
                return Ok(t);
            }
            assert!(Instant::now() < deadline, "telemetry never settled: {t}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the sink's counter `key` reaches `at_least`.
    async fn telemetry_reaches(
        &self,
        key: &str,
        at_least: u64,
        secs: u64,
    ) -> WebDriverResult<Value> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let t = self.telemetry().await?;
            if num(&t, key) >= at_least {
                return Ok(t);
            }
            assert!(
                Instant::now() < deadline,
                "{key} never reached {at_least}: {t}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// What the fault sink counted for telemetry: events sent to the sinks and errors
    /// the limiter held back (each reaches the HTTP sink once).
    async fn telemetry_counted_by_the_net(&self) -> WebDriverResult<u64> {
        let st = self.status().await?;
        Ok(num(&st, "telemetrySent") + num(&st, "telemetryHeldBack"))
    }
}

/// Checks every accepted body is OTLP/HTTP JSON logs naming the demo, the
/// library, the engine and the adapter, each record with its kind, label and
/// count; returns the errors they carry.
fn errors_accepted(
    browser: Browser,
    received: &[webgpu_guard_harness::collector::Received],
) -> u64 {
    use webgpu_guard_harness::collector::{errors_in, int_attribute, string_attribute};
    let mut total = 0;
    for request in received.iter().filter(|r| r.accepted()) {
        let decoded = request.decoded();
        for logs in &decoded.resource_logs {
            let resource = &logs.resource.as_ref().expect("a resource").attributes;
            assert_eq!(
                string_attribute(resource, "service.name"),
                Some("webgpu-guard-demo")
            );
            assert_eq!(
                string_attribute(resource, "telemetry.sdk.name"),
                Some("webgpu-guard")
            );
            let engine = string_attribute(resource, "webgpu.engine").unwrap_or("");
            let expected = if browser == Browser::Firefox {
                "wgpu"
            } else {
                "dawn"
            };
            assert!(engine.starts_with(expected), "engine {engine}");
            assert!(
                string_attribute(resource, "webgpu.adapter").is_some_and(|a| !a.is_empty()),
                "no adapter in {}",
                request.body
            );
            for record in logs.scope_logs.iter().flat_map(|s| &s.log_records) {
                assert!(record.severity_number >= 13, "{record:?}");
                assert!(record.time_unix_nano > 0, "{record:?}");
                assert!(string_attribute(&record.attributes, "webgpu.error.kind").is_some());
                assert!(string_attribute(&record.attributes, "webgpu.object.label").is_some());
                let count = int_attribute(&record.attributes, "webgpu.error.count").unwrap_or(0);
                assert!(count >= 1, "{record:?}");
            }
        }
        total += errors_in(&decoded);
    }
    total
}

on_both!(telemetry_reaches_a_collector_batched_through_a_storm);
/// A storm of 1000 errors a second for 10 s, sent to a real collector on
/// 127.0.0.1 (OTLP/HTTP JSON logs decoded with `opentelemetry-proto`): at most
/// one request a second, and the counts received add up to what the fault sink counted,
/// less what the sink says it dropped. An error whose label and phase carry a
/// token in a URL and an e-mail address reaches the collector without them.
async fn telemetry_reaches_a_collector_batched_through_a_storm(browser: Browser) -> TestResult {
    let collector = webgpu_guard_harness::collector::Collector::start();
    let s = session(browser, Flags::WebGpu).await?;
    let interval_ms = 1000;
    s.open(&format!(
        "?still&telemetry={}&telemetryInterval={interval_ms}",
        collector.url()
    ))
    .await?;
    s.wait_running(1).await?;
    assert_eq!(s.eval("return window.gpuFault('secret')").await?, true);
    s.telemetry_reaches("delivered", 1, 20).await?;
    let started = Instant::now();
    let answer = s
        .eval("return String(window.gpuInject('storm:1000:10000'))")
        .await?;
    assert_eq!(answer, "true");
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    let t = s.telemetry_settled(20).await?;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let received = collector.received();
    let during = received.iter().filter(|r| r.at >= started).count() as u64;
    eprintln!(
        "{}: {} errors counted, {} requests ({during} from the storm's start, over {elapsed_ms} ms), {} preflights; sink {t}",
        browser.name(),
        num(&t, "counted"),
        received.len(),
        collector.preflights()
    );
    assert!(
        during <= elapsed_ms / interval_ms + 1,
        "{during} requests in {elapsed_ms} ms, more than one per {interval_ms} ms"
    );
    assert!(
        num(&t, "counted") >= 9_000,
        "the storm was not counted: {t}"
    );
    let accepted = errors_accepted(browser, &received);
    assert_eq!(
        accepted,
        num(&t, "delivered"),
        "what the collector took, as the sink says"
    );
    assert_eq!(
        num(&t, "counted"),
        accepted + num(&t, "dropped") + num(&t, "beaconed"),
        "every error counted is received or said dropped: {t}"
    );
    assert_eq!(num(&t, "counted"), s.telemetry_counted_by_the_net().await?);
    // The secret error arrived, without its secrets.
    let bodies: String = received.iter().map(|r| r.body.as_str()).collect();
    assert!(
        bodies.contains("upload for …"),
        "the secret error never arrived"
    );
    for secret in ["s3cr3t", "t0ken", "token=", "ana@", "example.com"] {
        assert!(!bodies.contains(secret), "{secret} reached the collector");
    }
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(telemetry_rides_out_a_collector_that_refuses_fails_or_is_slow);
/// The collector refuses connections, then answers 502, then 429 with
/// `Retry-After: 3`, then answers after 5 s, then accepts: no exception in the
/// page, retries back off (doubling to the cap of 2 s; the server's 3 s
/// honoured), frames go on while a request waits, and the first success carries
/// what was held: everything counted is received, nothing dropped.
async fn telemetry_rides_out_a_collector_that_refuses_fails_or_is_slow(
    browser: Browser,
) -> TestResult {
    use webgpu_guard_harness::collector::{Collector, Mode};
    let collector = Collector::start();
    collector.set_mode(Mode::Refuse);
    let s = session(browser, Flags::WebGpu).await?;
    s.open(&format!(
        "?still&telemetry={}&telemetryInterval=250&telemetryRetryCap=2000",
        collector.url()
    ))
    .await?;
    s.wait_running(1).await?;
    let fault = "return window.gpuFault('validation')";
    s.eval(fault).await?;
    let t = s.telemetry_reaches("failedRequests", 3, 30).await?;
    assert!(collector.received().is_empty());
    assert!(
        t["lastFailure"]
            .as_str()
            .is_some_and(|f| f.starts_with("no answer")),
        "{t}"
    );

    collector.set_mode(Mode::Status(502, None));
    s.eval(fault).await?;
    let failed = num(&t, "failedRequests");
    s.telemetry_reaches("failedRequests", failed + 3, 30)
        .await?;
    let answered: Vec<Instant> = collector.received().iter().map(|r| r.at).collect();
    for pair in answered.windows(2) {
        let gap = pair[1].duration_since(pair[0]);
        // At the cap by now: 2 s, far more than the 250 ms interval.
        assert!(gap >= Duration::from_millis(1_500), "retried after {gap:?}");
    }

    collector.set_mode(Mode::Status(429, Some("3".into())));
    let before = collector.received().len();
    let t = s.telemetry_reaches("retryAfterHonoured", 2, 30).await?;
    let asked: Vec<Instant> = collector.received()[before..]
        .iter()
        .filter(|r| r.status == 429)
        .map(|r| r.at)
        .collect();
    assert!(asked.len() >= 2, "{t}");
    let gap = asked[1].duration_since(asked[0]);
    assert!(
        gap >= Duration::from_millis(2_800),
        "Retry-After 3 s not honoured: {gap:?}"
    );

    collector.set_mode(Mode::Slow(Duration::from_secs(5)));
    let before = collector.received().len();
    let deadline = Instant::now() + Duration::from_secs(20);
    while collector.received().len() == before {
        assert!(
            Instant::now() < deadline,
            "no request reached the slow collector"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The request waits for its answer: frames go on, errors are still taken.
    s.eval(fault).await?;
    // Frames that stopped while the request waited would end the test here.
    s.wait_frames(3).await?;
    assert!(
        num(&s.telemetry().await?, "inFlight") > 0,
        "the slow request is in flight"
    );

    collector.set_mode(Mode::Accept);
    let t = s.telemetry_settled(30).await?;
    let received = collector.received();
    eprintln!(
        "{}: {} requests ({} accepted); sink {t}",
        browser.name(),
        received.len(),
        received.iter().filter(|r| r.accepted()).count()
    );
    assert_eq!(num(&t, "dropped"), 0, "{t}");
    let accepted = errors_accepted(browser, &received);
    assert_eq!(accepted, num(&t, "counted"), "what was held arrived: {t}");
    assert_eq!(num(&t, "counted"), s.telemetry_counted_by_the_net().await?);
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

on_both!(a_page_hidden_during_a_storm_beacons_what_waits);
/// With a minute between requests, errors of a storm wait in the sink; the page
/// hidden (another tab in front) hands them to a page-hide request, and the
/// collector receives exactly what waited.
async fn a_page_hidden_during_a_storm_beacons_what_waits(browser: Browser) -> TestResult {
    let collector = webgpu_guard_harness::collector::Collector::start();
    let s = session(browser, Flags::WebGpu).await?;
    s.open(&format!(
        "?still&telemetry={}&telemetryInterval=60000",
        collector.url()
    ))
    .await?;
    s.wait_running(1).await?;
    // The first request goes at once; the next may go a minute later.
    s.eval("return window.gpuFault('validation')").await?;
    s.telemetry_reaches("delivered", 1, 20).await?;
    s.eval("window.__hidden = 0; document.addEventListener('visibilitychange', () => { if (document.hidden) window.__hidden++; }); return String(window.gpuInject('storm:1000:1500'))")
        .await?;
    // The storm over (however long a busy machine makes it), and every error
    // it made through the fault sink: what waits is all there will be.
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.eval("return window.gpuStormRunning()").await? != Value::Bool(false) {
        assert!(Instant::now() < deadline, "the storm never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.telemetry_reaches("pending", 1_000, 30).await?;
    let page = s.driver.window().await?;
    let other = s.driver.new_tab().await?;
    s.driver.switch_to_window(other).await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let beacon = loop {
        let received = collector.received();
        if received.len() >= 2 {
            break received[1].clone();
        }
        assert!(Instant::now() < deadline, "no beacon arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    s.driver.switch_to_window(page).await?;
    let t = s.telemetry().await?;
    let hidden = s.eval("return window.__hidden").await?;
    eprintln!(
        "{}: beacon after the page was hidden {hidden} time(s); sink {t}",
        browser.name()
    );
    // What waited when the page was hidden, whatever arrived after: the
    // request carried exactly what the sink says it handed over, and every
    // error counted is accounted for.
    let beaconed = num(&t, "beaconed");
    assert!(
        beaconed >= 1_000,
        "the storm's errors should have waited: {t}"
    );
    assert_eq!(
        webgpu_guard_harness::collector::errors_in(&beacon.decoded()),
        beaconed
    );
    assert_eq!(num(&t, "beacons"), 1);
    assert_eq!(
        num(&t, "counted"),
        num(&t, "delivered")
            + beaconed
            + num(&t, "dropped")
            + num(&t, "pending")
            + num(&t, "inFlight"),
        "{t}"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}

impl Session {
    /// The flock example's `flockStatus()`.
    async fn flock(&self) -> WebDriverResult<Value> {
        self.eval("return window.flockStatus()").await
    }

    /// Pauses the flock and waits until its snapshot is the paused state.
    async fn pause_the_flock(&self) -> WebDriverResult<Value> {
        self.eval("window.flockPause(true); return true").await?;
        // A frame or two on a machine so loaded that a frame takes seconds.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let f = self.flock().await?;
            if f["snapshotOwed"] == false && f["reading"] == false && num(&f, "snapshots") > 0 {
                return Ok(f);
            }
            assert!(
                Instant::now() < deadline,
                "the paused flock was never snapshotted: {f}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

on_both!(gpu_state_survives_matar_and_a_gpu_process_crash_through_a_snapshot);
/// A flock stepped on the GPU every frame (`examples/flock`): nothing on the CPU
/// knows where the particles are, nor the trails every step leaves in a
/// 512 x 512 texture. Paused (and both snapshotted: the buffer, and the texture
/// with its rows padded in the copy), its picture is the same after
/// `matarGPU()` and after a real GPU-process crash (Chromium by CDP; Firefox by
/// killing its GPU process), and differs from the flock's start: the new
/// devices started from the snapshots (without the texture's, the trails are
/// gone and the test fails).
async fn gpu_state_survives_matar_and_a_gpu_process_crash_through_a_snapshot(
    browser: Browser,
) -> TestResult {
    let flags = if browser == Browser::Firefox {
        Flags::FirefoxGpuProcess
    } else {
        Flags::WebGpuCrashes
    };
    let s = session(browser, flags).await?;
    s.driver.goto(s.server.url("flock/index.html")).await?;
    s.wait_running(1).await?;
    s.eval("window.flockPause(true); return true").await?;
    let start = s.element_image("canvas").await?;
    s.eval("window.flockPause(false); return true").await?;
    // Some steps, and a snapshot on the way.
    s.wait_frames(10).await?;
    let f = s.pause_the_flock().await?;
    let before = s.status().await?;
    let paused = s.element_image("canvas").await?;
    let moved = start.differing_pixels(&paused);
    eprintln!(
        "{}: flock {f}; {moved} pixels moved since the start",
        browser.name()
    );
    assert!(
        moved > 1_000,
        "the flock did not move: {moved} pixels differ"
    );

    s.eval("window.matarGPU(); return true").await?;
    let (after, _) = s.wait_recovered(2).await?;
    assert_eq!(after["liveObjects"], before["liveObjects"], "{after}");
    assert_eq!(after["liveBytes"], before["liveBytes"], "{after}");
    let image = s.element_image("canvas").await?;
    assert_eq!(
        paused.differing_pixels_saved(&image, &format!("flock-matar-{}", browser.name())),
        0,
        "the flock after matarGPU() is not the paused one"
    );

    let generation = after["generation"].as_u64().unwrap_or(2);
    if browser == Browser::Firefox {
        s.driver_process.kill_gpu_process()?;
    } else {
        s.crash_gpu_process().await?;
    }
    s.wait_running(generation + 1).await?;
    let image = s.element_image("canvas").await?;
    assert_eq!(
        paused.differing_pixels_saved(&image, &format!("flock-crash-{}", browser.name())),
        0,
        "the flock after a GPU-process crash is not the paused one"
    );
    // Going on again, it moves.
    s.eval("window.flockPause(false); return true").await?;
    s.wait_frames(2).await?;
    s.pause_the_flock().await?;
    let later = s.element_image("canvas").await?;
    assert!(
        paused.differing_pixels(&later) > 0,
        "the flock no longer moves"
    );
    s.assert_no_page_errors().await?;
    s.quit().await?;
    Ok(())
}
