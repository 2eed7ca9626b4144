//! The little linear algebra the demo and tests need: column-major 4x4 matrices
//! in WebGPU's clip space (depth 0..1).

/// A 3-vector.
pub type Vec3 = [f32; 3];
/// A column-major 4x4 matrix.
pub type Mat4 = [f32; 16];

/// `(sin x, cos x)`. In the browser through JavaScript's `Math`: Rust's own
/// trigonometry would add about 6 KB to the `.wasm`.
pub fn sin_cos(x: f32) -> (f32, f32) {
    #[cfg(target_arch = "wasm32")]
    {
        let x = f64::from(x);
        (js_sys::Math::sin(x) as f32, js_sys::Math::cos(x) as f32)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        x.sin_cos()
    }
}

/// `tan x`, through JavaScript's `Math` in the browser (see [`sin_cos`]).
pub fn tan(x: f32) -> f32 {
    #[cfg(target_arch = "wasm32")]
    {
        js_sys::Math::tan(f64::from(x)) as f32
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        x.tan()
    }
}

/// `a - b`.
pub fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// Cross product.
pub fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Dot product.
pub fn dot(a: Vec3, b: Vec3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `v / |v|` (zero stays zero).
pub fn normalize(v: Vec3) -> Vec3 {
    let len = dot(v, v).sqrt();
    if len == 0.0 {
        v
    } else {
        [v[0] / len, v[1] / len, v[2] / len]
    }
}

/// The identity.
pub fn identity() -> Mat4 {
    let mut m = [0.0; 16];
    m[0] = 1.0;
    m[5] = 1.0;
    m[10] = 1.0;
    m[15] = 1.0;
    m
}

/// `a x b`.
pub fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut out = [0.0; 16];
    for col in 0..4 {
        for row in 0..4 {
            out[col * 4 + row] = (0..4).map(|k| a[k * 4 + row] * b[col * 4 + k]).sum();
        }
    }
    out
}

/// `m x (x, y, z, 1)`, returning all four components.
pub fn transform(m: &Mat4, p: Vec3) -> [f32; 4] {
    let mut out = [0.0; 4];
    for (row, o) in out.iter_mut().enumerate() {
        *o = m[row] * p[0] + m[4 + row] * p[1] + m[8 + row] * p[2] + m[12 + row];
    }
    out
}

/// A right-handed view matrix looking from `eye` at `target`.
#[rustfmt::skip]
pub fn look_at(eye: Vec3, target: Vec3, up: Vec3) -> Mat4 {
    let f = normalize(sub(target, eye));
    let s = normalize(cross(f, up));
    let u = cross(s, f);
    [
        s[0], u[0], -f[0], 0.0,
        s[1], u[1], -f[1], 0.0,
        s[2], u[2], -f[2], 0.0,
        -dot(s, eye), -dot(u, eye), dot(f, eye), 1.0,
    ]
}

/// A right-handed perspective projection with depth in 0..1.
#[rustfmt::skip]
pub fn perspective(fov_y: f32, aspect: f32, near: f32, far: f32) -> Mat4 {
    let f = 1.0 / tan(fov_y / 2.0);
    let nf = 1.0 / (near - far);
    [
        f / aspect, 0.0, 0.0, 0.0,
        0.0, f, 0.0, 0.0,
        0.0, 0.0, far * nf, -1.0,
        0.0, 0.0, near * far * nf, 0.0,
    ]
}

/// A right-handed orthographic projection with depth in 0..1.
#[rustfmt::skip]
pub fn orthographic(l: f32, r: f32, b: f32, t: f32, near: f32, far: f32) -> Mat4 {
    [
        2.0 / (r - l), 0.0, 0.0, 0.0,
        0.0, 2.0 / (t - b), 0.0, 0.0,
        0.0, 0.0, 1.0 / (near - far), 0.0,
        (r + l) / (l - r), (t + b) / (b - t), near / (near - far), 1.0,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn perspective_maps_near_to_0_and_far_to_1() {
        let p = perspective(1.0, 1.0, 0.5, 50.0);
        let near = transform(&p, [0.0, 0.0, -0.5]);
        let far = transform(&p, [0.0, 0.0, -50.0]);
        assert!(close(near[2] / near[3], 0.0));
        assert!(close(far[2] / far[3], 1.0));
    }

    #[test]
    fn look_at_puts_the_target_in_front() {
        let v = look_at([0.0, 0.0, 5.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        let t = transform(&v, [0.0, 0.0, 0.0]);
        assert!(close(t[2], -5.0));
        let id = mul(&v, &identity());
        assert_eq!(id, v);
    }

    #[test]
    fn orthographic_maps_the_box_to_clip_space() {
        let o = orthographic(-2.0, 2.0, -1.0, 1.0, 0.0, 10.0);
        let a = transform(&o, [2.0, 1.0, 0.0]);
        let b = transform(&o, [-2.0, -1.0, -10.0]);
        assert!(close(a[0], 1.0) && close(a[1], 1.0) && close(a[2], 0.0));
        assert!(close(b[0], -1.0) && close(b[1], -1.0) && close(b[2], 1.0));
    }
}
