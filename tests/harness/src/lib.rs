//! The browser harness shared by the end-to-end tests and the benchmark runner:
//! a static server, chromedriver in its own process group, headless Chromium with
//! WebGPU on SwiftShader. Everything is torn down on `Drop`.

#![cfg(not(target_arch = "wasm32"))]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thirtyfour::prelude::*;

pub mod collector;

/// The workspace root (this crate lives in `tests/harness`).
pub fn root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.join("../..").canonicalize().unwrap_or(here)
}

/// A static file server for a build folder, stopped on drop.
pub struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Serves `dist` on 127.0.0.1 at a free port.
    pub fn start(dist: PathBuf) -> Server {
        Server::start_with(dist, false)
    }

    /// Serves `dist` cross-origin isolated (COOP and COEP headers): the page's
    /// `performance.now()` then reads to a few microseconds instead of Chromium's
    /// 100 µs, which a benchmark of millisecond workloads needs.
    pub fn start_isolated(dist: PathBuf) -> Server {
        Server::start_with(dist, true)
    }

    fn start_with(dist: PathBuf, isolated: bool) -> Server {
        assert!(
            dist.exists(),
            "{} is missing: build it with trunk first (scripts/test and scripts/bench do)",
            dist.display()
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let dist = dist.clone();
                        std::thread::spawn(move || serve(stream, &dist, isolated));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server { port, stop }
    }

    /// The URL of `page` (with its query).
    pub fn url(&self, page: &str) -> String {
        format!("http://127.0.0.1:{}/{page}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(stream: TcpStream, dist: &Path, isolated: bool) {
    let _ = stream.set_nonblocking(false);
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).map(|n| n == 0).unwrap_or(true) || line == "\r\n" {
            break;
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let path = path
        .split('?')
        .next()
        .unwrap_or("/")
        .trim_start_matches('/');
    let path = if path.is_empty() { "index.html" } else { path };
    let file = dist.join(path);
    let mut stream = stream;
    match (!path.contains(".."))
        .then(|| std::fs::read(&file))
        .and_then(Result::ok)
    {
        Some(body) => {
            let kind = match file.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html; charset=utf-8",
                Some("js") => "text/javascript",
                Some("wasm") => "application/wasm",
                Some("css") => "text/css",
                _ => "application/octet-stream",
            };
            let isolation = if isolated {
                "Cross-Origin-Opener-Policy: same-origin\r\nCross-Origin-Embedder-Policy: require-corp\r\n"
            } else {
                ""
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{isolation}Connection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
        None => {
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    }
}

/// The browser a test drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Browser {
    /// Headless Chromium (Dawn, WebGPU on SwiftShader), through chromedriver.
    Chromium,
    /// Headless Firefox ESR (wgpu, WebGPU on lavapipe), through geckodriver.
    Firefox,
}

impl Browser {
    /// The short name used in test names and messages.
    pub fn name(self) -> &'static str {
        match self {
            Browser::Chromium => "chromium",
            Browser::Firefox => "firefox",
        }
    }
}

/// A WebDriver server (chromedriver or geckodriver) in its own process group,
/// killed with the group on drop. Firefox's console goes to geckodriver's output
/// (`devtools.console.stdout.content`), collected in [`Driver::console`].
pub struct Driver {
    child: Child,
    /// Its port.
    pub port: u16,
    /// The browser it drives.
    pub browser: Browser,
    console: Arc<std::sync::Mutex<Vec<(Instant, String)>>>,
}

impl Driver {
    /// Starts the WebDriver server of `browser` on a free port and waits until it
    /// listens.
    pub fn for_browser(browser: Browser) -> Driver {
        Driver::spawn(browser, None)
    }

    fn spawn(browser: Browser, display: Option<String>) -> Driver {
        use std::os::unix::process::CommandExt;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let config = root().join("target").join("e2e-browser-config");
        let _ = std::fs::create_dir_all(&config);
        let mut command = match browser {
            Browser::Chromium => {
                let mut c = Command::new(
                    std::env::var("CHROMEDRIVER")
                        .unwrap_or_else(|_| "/usr/bin/chromedriver".into()),
                );
                c.arg(format!("--port={port}"));
                c
            }
            Browser::Firefox => {
                let default = format!(
                    "{}/.cargo/bin/geckodriver",
                    std::env::var("HOME").unwrap_or_default()
                );
                let mut c = Command::new(std::env::var("GECKODRIVER").unwrap_or(default));
                c.arg(format!("--port={port}"));
                c
            }
        };
        if let Some(display) = display {
            command.env("DISPLAY", display);
        }
        let console = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut child = command
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_RUNTIME_DIR", &config)
            .stdout(if browser == Browser::Firefox {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("the WebDriver server starts");
        if let Some(stdout) = child.stdout.take() {
            let sink = console.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if let Ok(mut lines) = sink.lock() {
                        lines.push((Instant::now(), line));
                    }
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the WebDriver server did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Driver {
            child,
            port,
            browser,
            console,
        }
    }

    /// Starts the WebDriver server as [`Driver::for_browser`] does, for a
    /// browser launched with `flags`: with [`Flags::FirefoxGpuProcess`] it gets
    /// the display of an Xvfb server started for this test process.
    pub fn for_browser_with(browser: Browser, flags: Flags) -> Driver {
        // Inherited by geckodriver and the Firefox it starts.
        let display = (flags == Flags::FirefoxGpuProcess).then(xvfb_display);
        Driver::spawn(browser, display)
    }

    /// The pid of the GPU process of the browser this driver started (the
    /// `-contentproc ... gpu` child of its Firefox), if there is one now.
    pub fn gpu_process(&self) -> Option<u32> {
        let table = process_table();
        let mut family = vec![self.child.id()];
        let mut at = 0;
        while at < family.len() {
            let parent = family[at];
            family.extend(table.iter().filter(|p| p.1 == parent).map(|p| p.0));
            at += 1;
        }
        table
            .iter()
            .filter(|p| family.contains(&p.0))
            .find(|p| {
                p.2.iter().any(|a| a == "-contentproc")
                    && p.2.last().map(String::as_str) == Some("gpu")
            })
            .map(|p| p.0)
    }

    /// Kills (SIGKILL, by its pid) the GPU process of the browser this driver
    /// started, once there is one (after a kill Firefox starts the next when
    /// it needs one), and returns the pid killed.
    pub fn kill_gpu_process(&self) -> Result<u32, String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let pid = loop {
            match self.gpu_process() {
                Some(pid) => break pid,
                None if Instant::now() > deadline => {
                    return Err(
                        "the browser runs no GPU process (layers.gpu-process.* prefs?)".into(),
                    )
                }
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        let killed = Command::new("kill")
            .args(["-s", "KILL", &pid.to_string()])
            .status()
            .map_err(|e| e.to_string())?;
        if !killed.success() {
            return Err(format!("kill {pid} failed"));
        }
        Ok(pid)
    }

    /// Firefox's console and error lines so far, with when they were read.
    pub fn console(&self) -> Vec<(Instant, String)> {
        self.console.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `(pid, parent pid, command line)` of every process, from `/proc`.
fn process_table() -> Vec<(u32, u32, Vec<String>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (name) state ppid ...`: the name may hold spaces and parentheses.
            let after_name = &stat[stat.rfind(')')? + 1..];
            let ppid = after_name.split_whitespace().nth(1)?.parse().ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let args = cmdline
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some((pid, ppid, args))
        })
        .collect()
}

/// The display of an Xvfb server started once for this test process; a shell
/// beside it stops it when this process is gone.
fn xvfb_display() -> String {
    static DISPLAY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DISPLAY
        .get_or_init(|| {
            // `-displayfd 1`: Xvfb picks a free display itself and writes its
            // number on its standard output once it listens.
            let watch = format!(
                "Xvfb -displayfd 1 -screen 0 1280x1024x24 -nolisten tcp & x=$!; \
                 while kill -0 {} 2>/dev/null && kill -0 $x 2>/dev/null; do sleep 1; done; \
                 kill $x 2>/dev/null",
                std::process::id()
            );
            let mut child = Command::new("sh")
                .args(["-c", &watch])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("Xvfb cannot be started (apt-get install xvfb)");
            let mut number = String::new();
            if let Some(stdout) = child.stdout.take() {
                let _ = BufReader::new(stdout).read_line(&mut number);
            }
            let number = number.trim();
            assert!(
                !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()),
                "Xvfb gave no display number"
            );
            // Its shell stops it once this process ends.
            std::mem::forget(child);
            format!(":{number}")
        })
        .clone()
}

/// Which browser flags a test needs.
#[derive(Clone, Copy, PartialEq)]
pub enum Flags {
    /// WebGPU on, presenting to a canvas.
    WebGpu,
    /// Plus many GPU-process crashes allowed in a row (Chromium).
    WebGpuCrashes,
    /// WebGPU on, with a JavaScript heap that measures what a page keeps
    /// (Chromium: V8 never flushes compiled code, so that the heap does not
    /// shrink as old code goes and hide what grows; Firefox: as `WebGpu`).
    WebGpuSteadyHeap,
    /// WebGPU on, with a device pixel ratio of 2 (Chromium:
    /// `--force-device-scale-factor=2`; Firefox: `layout.css.devPixelsPerPx`).
    WebGpuRatio2,
    /// No WebGPU at all (Chromium: no flags; Firefox: `dom.webgpu.enabled` off).
    NoWebGpu,
    /// WebGPU present but no adapter (Firefox: the blocklist is not ignored).
    NoAdapter,
    /// Firefox only: headful under Xvfb with its GPU process forced on (and
    /// restarted as often as a test kills it), so that the GPU process can be
    /// killed for real ([`Driver::kill_gpu_process`]).
    FirefoxGpuProcess,
}

/// Kills the browser started with this profile (Chromium leaves chromedriver's
/// process group) and removes the profile.
pub struct Profile(pub PathBuf);

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", &self.0.display().to_string()])
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

static PROFILE_COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A fresh profile folder under `target/`.
pub fn new_profile() -> Profile {
    Profile(root().join("target").join(format!(
        "e2e-profile-{}-{}",
        std::process::id(),
        PROFILE_COUNTER.fetch_add(1, Ordering::Relaxed)
    )))
}

/// Starts the driver's headless browser with `flags`.
pub async fn launch(
    driver: &Driver,
    profile: &Profile,
    flags: Flags,
) -> WebDriverResult<WebDriver> {
    match driver.browser {
        Browser::Chromium => launch_chromium(driver, profile, flags).await,
        Browser::Firefox => launch_firefox(driver, flags).await,
    }
}

async fn launch_firefox(driver: &Driver, flags: Flags) -> WebDriverResult<WebDriver> {
    let mut caps = DesiredCapabilities::firefox();
    caps.set_firefox_binary(
        &std::env::var("FIREFOX").unwrap_or_else(|_| "/usr/bin/firefox-esr".into()),
    )?;
    if flags != Flags::FirefoxGpuProcess {
        caps.add_arg("-headless")?;
    }
    let mut prefs = thirtyfour::common::capabilities::firefox::FirefoxPreferences::new();
    if flags == Flags::FirefoxGpuProcess {
        // A GPU process even on this software stack, restarted after each kill.
        prefs.set("layers.gpu-process.enabled", true)?;
        prefs.set("layers.gpu-process.force-enabled", true)?;
        prefs.set("layers.gpu-process.max_restarts", 100)?;
        prefs.set("layers.gpu-process.max_restarts_with_decoder", 100)?;
        prefs.set("layers.gpu-process.max_launch_attempts", 100)?;
        // Relaunched after each kill, never replaced by the parent process;
        // a process killed early counts as stable all the same.
        prefs.set("layers.gpu-process.allow-fallback-to-parent", false)?;
        prefs.set("layers.gpu-process.stable.min-uptime-ms", 0)?;
        prefs.set("layers.gpu-process.stable.frame-threshold", 0)?;
    }
    prefs.set("dom.webgpu.enabled", flags != Flags::NoWebGpu)?;
    prefs.set("gfx.webgpu.ignore-blocklist", flags != Flags::NoAdapter)?;
    prefs.set("devtools.console.stdout.content", true)?;
    // Full-precision performance.now() (the default rounds it), for the benchmark.
    prefs.set("privacy.reduceTimerPrecision", false)?;
    if flags == Flags::WebGpuRatio2 {
        prefs.set("layout.css.devPixelsPerPx", "2.0")?;
    }
    caps.set_preferences(prefs)?;
    let driver = WebDriver::new(format!("http://127.0.0.1:{}", driver.port), caps).await?;
    driver.set_window_rect(0, 0, 1280, 1024).await?;
    Ok(driver)
}

/// Starts headless Chromium through `chromedriver` with `flags`.
async fn launch_chromium(
    chromedriver: &Driver,
    profile: &Profile,
    flags: Flags,
) -> WebDriverResult<WebDriver> {
    let mut caps = DesiredCapabilities::chrome();
    caps.set_binary(&std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()))?;
    let mut args = vec![
        "--headless=new".to_string(),
        "--no-sandbox".into(),
        "--disable-dev-shm-usage".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--no-first-run".into(),
        "--window-size=1280,1024".into(),
        format!("--user-data-dir={}", profile.0.display()),
    ];
    if flags != Flags::NoWebGpu && flags != Flags::NoAdapter {
        args.extend(
            [
                "--enable-unsafe-webgpu",
                "--enable-features=Vulkan",
                "--use-vulkan=swiftshader",
                "--use-angle=swiftshader",
            ]
            .map(String::from),
        );
    }
    if flags == Flags::WebGpuRatio2 {
        args.push("--force-device-scale-factor=2".into());
    }
    if flags == Flags::WebGpuSteadyHeap {
        args.push("--js-flags=--no-flush-bytecode --no-flush-baseline-code".into());
    }
    if flags == Flags::WebGpuCrashes {
        args.push("--disable-domain-blocking-for-3d-apis".into());
        args.push("--disable-gpu-process-crash-limit".into());
    }
    for arg in &args {
        caps.add_arg(arg)?;
    }
    WebDriver::new(format!("http://127.0.0.1:{}", chromedriver.port), caps).await
}
