//! Writes `www/scene.bin`: the demo's scene as a checked payload (48-byte records:
//! position + scale, color + shape, rotation + per-axis scale).
//!
//! `cargo run --example make_scene`

use webgpu_guard::payload::{f32_bytes, Payload};

fn record(
    pos: [f32; 3],
    scale: f32,
    color: [f32; 3],
    shape: f32,
    rot: f32,
    axes: [f32; 3],
) -> Vec<u8> {
    f32_bytes(&[
        pos[0], pos[1], pos[2], scale, color[0], color[1], color[2], shape, rot, axes[0], axes[1],
        axes[2],
    ])
}

fn main() -> std::io::Result<()> {
    let mut records = vec![
        // The ground: a flat cube (y scale below 0.2 marks it static).
        record(
            [0.0, -0.1, 0.0],
            1.0,
            [0.78, 0.76, 0.72],
            0.0,
            0.0,
            [22.0, 0.2, 22.0],
        ),
    ];
    let palette = [
        [0.85, 0.33, 0.25],
        [0.25, 0.55, 0.85],
        [0.95, 0.75, 0.25],
        [0.35, 0.75, 0.45],
        [0.65, 0.40, 0.80],
    ];
    for i in 0..12 {
        let angle = i as f32 / 12.0 * std::f32::consts::TAU;
        let radius = if i % 2 == 0 { 5.0 } else { 3.2 };
        let size = 0.8 + 0.25 * (i % 3) as f32;
        let shape = if i % 3 == 0 { 1.0 } else { 0.0 };
        let y = if shape == 1.0 { 1.6 } else { size * 0.5 + 0.05 };
        records.push(record(
            [radius * angle.cos(), y, radius * angle.sin()],
            size,
            palette[i % palette.len()],
            shape,
            angle,
            [1.0, 1.0 + 0.5 * (i % 2) as f32, 1.0],
        ));
    }
    // A tall pillar in the middle casting a long shadow.
    records.push(record(
        [0.0, 1.5, 0.0],
        1.0,
        [0.9, 0.9, 0.92],
        0.0,
        0.4,
        [1.0, 3.0, 1.0],
    ));
    let bytes = Payload::encode(48, &records);
    Payload::parse("scene.bin", &bytes, 48).expect("the payload checks");
    std::fs::write("www/scene.bin", &bytes)?;
    println!(
        "wrote www/scene.bin: {} records, {} bytes",
        records.len(),
        bytes.len()
    );
    Ok(())
}
