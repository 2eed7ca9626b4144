//! CPU-side meshes: a unit cube and an octahedron, as interleaved position + normal.

/// Floats per vertex: position (3) + normal (3).
pub const FLOATS_PER_VERTEX: usize = 6;

/// A mesh: interleaved vertices and 16-bit indices.
pub struct Mesh {
    /// Interleaved position and normal.
    pub vertices: Vec<f32>,
    /// Triangle list.
    pub indices: Vec<u16>,
}

/// A cube from -0.5 to 0.5, with flat normals.
pub fn cube() -> Mesh {
    let faces: [([f32; 3], [f32; 3], [f32; 3]); 6] = [
        ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]),
        ([-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
        ([0.0, 1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]),
        ([0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
        ([0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]),
        ([0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]),
    ];
    let mut vertices = Vec::new();
    let mut indices = Vec::new();
    for (n, up, right) in faces {
        let base = (vertices.len() / FLOATS_PER_VERTEX) as u16;
        for (su, sr) in [(-1.0, -1.0), (-1.0, 1.0), (1.0, 1.0), (1.0, -1.0)] {
            for axis in 0..3 {
                vertices.push(0.5 * (n[axis] + su * up[axis] + sr * right[axis]));
            }
            vertices.extend_from_slice(&n);
        }
        // Counter-clockwise seen from outside.
        let (a, b, c, d) = (base, base + 1, base + 2, base + 3);
        let outward = cross3(
            sub3(corner(&vertices, b), corner(&vertices, a)),
            sub3(corner(&vertices, c), corner(&vertices, a)),
        );
        if dot3(outward, n) > 0.0 {
            indices.extend_from_slice(&[a, b, c, a, c, d]);
        } else {
            indices.extend_from_slice(&[a, c, b, a, d, c]);
        }
    }
    Mesh { vertices, indices }
}

/// An octahedron with radius 0.5 and flat normals.
pub fn octahedron() -> Mesh {
    let p = |x: f32, y: f32, z: f32| [x * 0.5, y * 0.5, z * 0.5];
    let top = p(0.0, 1.0, 0.0);
    let bottom = p(0.0, -1.0, 0.0);
    let ring = [
        p(1.0, 0.0, 0.0),
        p(0.0, 0.0, 1.0),
        p(-1.0, 0.0, 0.0),
        p(0.0, 0.0, -1.0),
    ];
    let mut vertices = Vec::new();
    let mut indices = Vec::new();
    for i in 0..4 {
        let a = ring[i];
        let b = ring[(i + 1) % 4];
        for tri in [[top, b, a], [bottom, a, b]] {
            let n = normalize3(cross3(sub3(tri[1], tri[0]), sub3(tri[2], tri[0])));
            let base = (vertices.len() / FLOATS_PER_VERTEX) as u16;
            for v in tri {
                vertices.extend_from_slice(&v);
                vertices.extend_from_slice(&n);
            }
            indices.extend_from_slice(&[base, base + 1, base + 2]);
        }
    }
    Mesh { vertices, indices }
}

fn corner(v: &[f32], i: u16) -> [f32; 3] {
    let o = i as usize * FLOATS_PER_VERTEX;
    [v[o], v[o + 1], v[o + 2]]
}

fn sub3(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross3(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot3(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn normalize3(a: [f32; 3]) -> [f32; 3] {
    let l = dot3(a, a).sqrt();
    [a[0] / l, a[1] / l, a[2] / l]
}
