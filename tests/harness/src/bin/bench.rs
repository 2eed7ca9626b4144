//! The benchmark runner: serves the bench page built by `scripts/bench`, runs it in
//! headless Chromium (real WebGPU), and prints medians and ratios measured in one
//! run, with the targets. Never fails a build: a missed target is reported.
//!
//! `scripts/bench` (it builds the pages first, then runs this binary).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use webgpu_guard_harness::{launch, new_profile, root, Browser, Driver, Flags, Server};

fn gzip_len(path: &Path) -> u64 {
    Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .map(|o| o.stdout.len() as u64)
        .unwrap_or(0)
}

fn find(dir: &Path, ext: &str) -> Option<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().and_then(|e| e.to_str()) == Some(ext))
}

fn sizes(dir: &Path) -> Option<(u64, u64, u64, u64)> {
    let wasm = find(dir, "wasm")?;
    let js = find(dir, "js")?;
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    Some((len(&wasm), gzip_len(&wasm), len(&js), gzip_len(&js)))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = root();
    let bench_dist = root.join("target").join("dist-bench");
    let chromedriver = Driver::for_browser(Browser::Chromium);
    let server = Server::start(bench_dist.clone());
    let profile = new_profile();
    let driver = launch(&chromedriver, &profile, Flags::WebGpu).await?;
    let page = if bench_dist.join("bench.html").exists() {
        "bench.html"
    } else {
        "index.html"
    };
    driver.goto(server.url(page)).await?;
    let deadline = Instant::now() + Duration::from_secs(900);
    let mut last_progress = String::new();
    let results: Value = loop {
        let got = driver
            .execute(
                "return [window.benchResults || null, window.benchProgress || '']",
                vec![],
            )
            .await?
            .json()
            .clone();
        let progress = got[1].as_str().unwrap_or_default().to_string();
        if progress != last_progress {
            eprintln!("[bench] {progress}");
            last_progress = progress;
        }
        if let Some(text) = got[0].as_str() {
            break serde_json::from_str(text)?;
        }
        if Instant::now() > deadline {
            return Err("the bench page did not finish in 15 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    drop(profile);
    let _ = tokio::time::timeout(Duration::from_secs(10), driver.quit()).await;
    let picture = time_to_picture(&chromedriver, &root).await;
    drop(chromedriver);
    std::fs::write(
        root.join("target").join("bench-results.json"),
        results.to_string(),
    )?;
    if let Some(error) = results.get("error") {
        return Err(format!("the bench page failed: {error}").into());
    }

    let machine = format!(
        "{} CPUs, {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        "Chromium, WebGPU on SwiftShader (software)"
    );
    println!("webgpu-guard benchmarks ({machine}); medians, ratios within this run\n");

    println!("Start-up of 240 mixed resources (100 buffers, 60 textures, 20 samplers, 40 bind groups, 20 pipelines), median of 7:");
    let rows = results["startup"].as_array().cloned().unwrap_or_default();
    let base = rows.first().map(|r| f(&r["median_ms"])).unwrap_or(f64::NAN);
    println!(
        "  {:<42} {:>10} {:>10} {:>8}",
        "strategy", "ms", "added ms", "ratio"
    );
    for r in &rows {
        let ms = f(&r["median_ms"]);
        println!(
            "  {:<42} {:>10.2} {:>10.2} {:>8.2}",
            r["name"].as_str().unwrap_or("?"),
            ms,
            ms - base,
            ms / base
        );
    }
    let added = |i: usize| {
        rows.get(i)
            .map(|r| f(&r["median_ms"]) - base)
            .unwrap_or(f64::NAN)
    };
    let (phases, one_by_one, per_call, attributed) = (added(1), added(2), added(3), added(4));
    let floor = 0.05; // ms: below this an "added" figure is noise
    for (name, cost) in [
        ("per-call scopes", per_call),
        ("attribution through labels", attributed),
    ] {
        println!(
            "  target ({name}): adds <= 2x what 8 phases add: {:.2} vs {:.2} ms -> {}; >= 20x cheaper than one-by-one: {:.1}x -> {}",
            cost,
            phases,
            verdict(cost <= 2.0 * phases.max(floor)),
            one_by_one / cost.max(floor),
            verdict(one_by_one >= 20.0 * cost.max(floor))
        );
    }

    let fr = &results["frame"];
    let (none, scoped) = (f(&fr["none_cpu_ms"]), f(&fr["scoped_cpu_ms"]));
    let (none_total, scoped_total) = (f(&fr["none_total_ms"]), f(&fr["scoped_total_ms"]));
    println!("\nFrame cost (main thread, per frame, small offscreen frame):");
    println!(
        "  in the frame:   no scope {none:.4} ms, frame scope {scoped:.4} ms ({:+.1}%)",
        (scoped / none - 1.0) * 100.0
    );
    println!(
        "  with pops resolved: no scope {none_total:.4} ms, frame scope {scoped_total:.4} ms ({:+.1}%)",
        (scoped_total / none_total - 1.0) * 100.0
    );
    let scene = &results["recovery"]["scene_frame"];
    let (scene_none, scene_scoped) = (f(&scene["none_ms"]), f(&scene["scoped_ms"]));
    println!(
        "  the demo's frame:   no scope {scene_none:.4} ms, frame scope {scene_scoped:.4} ms ({:+.1}%)",
        (scene_scoped / scene_none - 1.0) * 100.0
    );
    // The demo-frame difference is within the noise of a software GPU sharing the
    // CPU; the verdict uses the scope's fixed cost, measured in a tight loop,
    // against the demo's frame.
    let fixed = scoped_total - none_total;
    println!(
        "  target: a frame scope adds <= 2% main-thread time per frame: fixed ~{fixed:.3} ms = {:.1}% of the demo's {scene_none:.2} ms frame -> {}",
        fixed / scene_none * 100.0,
        verdict(fixed <= scene_none * 0.02)
    );

    let storm = results["storm"].as_array().cloned().unwrap_or_default();
    println!("\nUncaptured-error storm (3 s each, rAF-driven):");
    println!(
        "  {:<8} {:>10} {:>16} {:>10} {:>10}",
        "run", "frame ms", "main thread ms", "errors/s", "lines/s"
    );
    for r in &storm {
        println!(
            "  {:<8} {:>10.2} {:>16.4} {:>10.1} {:>10.2}",
            r["name"].as_str().unwrap_or("?"),
            f(&r["frame_ms"]),
            f(&r["main_thread_ms"]),
            f(&r["errors_per_s"]),
            f(&r["lines_per_s"])
        );
    }
    if let [clean, hot] = &storm[..] {
        let ratio = f(&hot["frame_ms"]) / f(&clean["frame_ms"]);
        println!(
            "  target: frame time within 5% of clean: {:+.1}% -> {}",
            (ratio - 1.0) * 100.0,
            verdict(ratio <= 1.05)
        );
        println!(
            "  target: at most 6 lines a second: {:.2} -> {}",
            f(&hot["lines_per_s"]),
            verdict(f(&hot["lines_per_s"]) <= 6.0)
        );
    }

    let cold = &results["recovery"]["cold"];
    let rec = &results["recovery"]["recovery"];
    println!("\nRecovery of the demo scene, backoff excluded (median of 5) vs cold start:");
    println!(
        "  {:<10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>11} {:>9}",
        "", "assets", "adapter", "device", "canvas", "resources", "(pipelines)", "total"
    );
    for (name, v) in [("cold", cold), ("recovery", rec)] {
        println!(
            "  {:<10} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>11.1} {:>9.1}",
            name,
            if name == "cold" {
                f(&v["assets_ms"])
            } else {
                0.0
            },
            f(&v["adapter_ms"]),
            f(&v["device_ms"]),
            f(&v["configure_ms"]),
            f(&v["resources_ms"]),
            f(&v["pipeline_wait_ms"]),
            f(&v["to_first_frame_ms"])
        );
    }
    let page_cold = f(&cold["navigation_to_first_frame_ms"]);
    println!("  cold start of the page, from navigation to the first frame: {page_cold:.1} ms");
    let ratio = f(&rec["to_first_frame_ms"]) / page_cold;
    let init_ratio = f(&rec["to_first_frame_ms"]) / f(&cold["to_first_frame_ms"]);
    println!(
        "  target: recovery <= half a cold start: {ratio:.2} of the page's cold start -> {}; {init_ratio:.2} of its init alone (assets, adapter, device, resources)",
        verdict(ratio <= 0.5)
    );

    match &picture {
        Ok(p) => print_time_to_picture(p),
        Err(e) => println!("\nTime to picture: not measured ({e})"),
    }

    println!("\nSizes (release, wasm-opt -Oz):");
    for (name, dir) in [
        ("demo", root.join("dist")),
        (
            "bare web-sys triangle",
            root.join("target").join("dist-triangle"),
        ),
    ] {
        match sizes(&dir) {
            Some((w, wg, j, jg)) => println!(
                "  {name:<22} wasm {:>7.1} KB raw {:>6.1} KB gzip   js glue {:>6.1} KB raw {:>5.1} KB gzip",
                w as f64 / 1024.0,
                wg as f64 / 1024.0,
                j as f64 / 1024.0,
                jg as f64 / 1024.0
            ),
            None => println!("  {name:<22} (not built)"),
        }
    }
    if let (Some(demo), Some(tri)) = (
        sizes(&root.join("dist")),
        sizes(&root.join("target").join("dist-triangle")),
    ) {
        println!(
            "  the guards and the scene add {:.1} KB gzip of wasm over the bare triangle; target: demo <= 64 KB gzip -> {}",
            (demo.1 as f64 - tri.1 as f64) / 1024.0,
            verdict(demo.1 <= 64 * 1024)
        );
    }
    Ok(())
}

/// Time to picture after a loss, measured on the demo (`dist/`) with real
/// GPU-process crashes allowed: from the trigger to the first frame submitted on
/// the new device, the wait before the first attempt included.
struct Picture {
    /// `matarGPU()`: (to picture, rebuild alone, wait before the attempt), ms.
    matar: Vec<(f64, f64, f64)>,
    /// GPU-process crash: (crash to picture, crash to the loss seen, wait), ms.
    crash: Vec<(f64, f64, f64)>,
    /// The demo's frame interval, ms.
    frame_interval_ms: f64,
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

async fn status(driver: &thirtyfour::WebDriver) -> Result<Value, Box<dyn std::error::Error>> {
    Ok(driver
        .execute(
            "return window.gpuStatus ? window.gpuStatus() : null",
            vec![],
        )
        .await?
        .json()
        .clone())
}

async fn wait_generation(
    driver: &thirtyfour::WebDriver,
    generation: u64,
) -> Result<Value, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = status(driver).await?;
        if st["state"] == "running"
            && st["generation"].as_u64() == Some(generation)
            && st["lastInit"]["firstFrameAtMs"].as_f64().unwrap_or(0.0) > 0.0
            && st["lastInit"]["recovery"] == true
        {
            return Ok(st);
        }
        if Instant::now() > deadline {
            return Err(format!("generation {generation} never ran: {st}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn time_to_picture(
    chromedriver: &Driver,
    root: &Path,
) -> Result<Picture, Box<dyn std::error::Error>> {
    let server = Server::start(root.join("dist"));
    let profile = new_profile();
    let driver = launch(chromedriver, &profile, Flags::WebGpuCrashes).await?;
    driver
        .goto(server.url("index.html?still&crashwindow=0"))
        .await?;
    let mut generation = 1;
    let deadline = Instant::now() + Duration::from_secs(60);
    while status(&driver).await?["state"] != "running" {
        if Instant::now() > deadline {
            return Err("the demo never ran".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let frame_interval_ms = driver
        .execute(
            "return await new Promise((done) => { const t = []; \
             const step = (now) => { t.push(now); if (t.length < 31) requestAnimationFrame(step); \
             else done((t[30] - t[0]) / 30); }; requestAnimationFrame(step); })",
            vec![],
        )
        .await?
        .json()
        .as_f64()
        .unwrap_or(f64::NAN);
    let mut matar = Vec::new();
    for _ in 0..10 {
        driver
            .execute("window.matarGPU(); return true", vec![])
            .await?;
        generation += 1;
        let st = wait_generation(&driver, generation).await?;
        let t = &st["lastInit"];
        matar.push((
            f(&t["toPictureMs"]),
            f(&t["toFirstFrameMs"]),
            f(&t["waitMs"]),
        ));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut crash = Vec::new();
    for _ in 0..10 {
        let crashed_at = driver
            .execute("return performance.now()", vec![])
            .await?
            .json()
            .as_f64()
            .unwrap_or(f64::NAN);
        driver
            .cdp()
            .send_raw("Browser.crashGpuProcess", serde_json::json!({}))
            .await?;
        generation += 1;
        let st = wait_generation(&driver, generation).await?;
        let t = &st["lastInit"];
        let picture_at = f(&t["firstFrameAtMs"]);
        let seen = picture_at - f(&t["toPictureMs"]);
        crash.push((picture_at - crashed_at, seen - crashed_at, f(&t["waitMs"])));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), driver.quit()).await;
    drop(profile);
    Ok(Picture {
        matar,
        crash,
        frame_interval_ms,
    })
}

fn print_time_to_picture(p: &Picture) {
    println!("\nTime to picture after a loss (demo scene, medians of 10; the first attempt runs at once):");
    let to_picture = median(p.matar.iter().map(|m| m.0).collect());
    let rebuild = median(p.matar.iter().map(|m| m.1).collect());
    let wait = median(p.matar.iter().map(|m| m.2).collect());
    println!(
        "  matarGPU(): {to_picture:.1} ms to the first new frame (wait {wait:.1} ms, rebuild {rebuild:.1} ms); frame interval {:.1} ms",
        p.frame_interval_ms
    );
    let budget = rebuild + 2.0 * p.frame_interval_ms;
    println!(
        "  target: at most the rebuild plus two frames ({budget:.1} ms) -> {}",
        verdict(to_picture <= budget)
    );
    let crash = median(p.crash.iter().map(|c| c.0).collect());
    let seen = median(p.crash.iter().map(|c| c.1).collect());
    let crash_wait = median(p.crash.iter().map(|c| c.2).collect());
    let all: Vec<String> = p.crash.iter().map(|c| format!("{:.0}", c.0)).collect();
    println!(
        "  GPU-process crash (CDP Browser.crashGpuProcess): {crash:.1} ms to the first new frame; the loss is seen after {seen:.1} ms, wait {crash_wait:.1} ms; all: {}",
        all.join(", ")
    );
    println!(
        "  target: at most 700 ms median over 10 -> {}",
        verdict(crash <= 700.0)
    );
}
