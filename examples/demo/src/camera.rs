//! The orbit camera: plain Rust state, outside every GPU object.

use crate::math::{self, Mat4, Vec3};

/// Yaw, pitch and distance around a target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    /// Rotation about the vertical axis (radians).
    pub yaw: f32,
    /// Elevation (radians), clamped away from the poles.
    pub pitch: f32,
    /// Distance to the target.
    pub distance: f32,
    /// The point looked at.
    pub target: Vec3,
}

impl Default for OrbitCamera {
    fn default() -> Self {
        OrbitCamera {
            yaw: 0.6,
            pitch: 0.55,
            distance: 15.0,
            target: [0.0, 0.8, 0.0],
        }
    }
}

impl OrbitCamera {
    /// The eye position.
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = crate::math::sin_cos(self.yaw);
        let (sp, cp) = crate::math::sin_cos(self.pitch);
        [
            self.target[0] + self.distance * cp * sy,
            self.target[1] + self.distance * sp,
            self.target[2] + self.distance * cp * cy,
        ]
    }

    /// Rotates by a drag of `dx`, `dy` pixels.
    pub fn drag(&mut self, dx: f32, dy: f32) {
        self.yaw -= dx * 0.008;
        self.pitch = (self.pitch + dy * 0.008).clamp(0.05, 1.45);
    }

    /// Zooms by a wheel delta.
    pub fn zoom(&mut self, delta: f32) {
        self.distance = (self.distance * (1.0 + delta * 0.001)).clamp(4.0, 60.0);
    }

    /// The view-projection matrix for `aspect`.
    pub fn view_proj(&self, aspect: f32) -> Mat4 {
        let view = math::look_at(self.eye(), self.target, [0.0, 1.0, 0.0]);
        let proj = math::perspective(0.9, aspect, 0.1, 200.0);
        math::mul(&proj, &view)
    }
}

/// What a pointer move means for the camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GestureStep {
    /// Nothing (a pointer that is not down).
    None,
    /// One pointer moved by this many pixels: orbit.
    Drag(f64, f64),
    /// Two pointers' distance changed by this many pixels: zoom.
    Pinch(f64),
}

/// Pointers currently down on the canvas (mouse, pen or fingers).
#[derive(Default)]
pub struct Gesture {
    pointers: Vec<(i32, f64, f64)>,
    kind: String,
}

impl Gesture {
    fn spread(&self) -> Option<f64> {
        match self.pointers[..] {
            [(_, ax, ay), (_, bx, by)] => Some(((ax - bx).powi(2) + (ay - by).powi(2)).sqrt()),
            _ => None,
        }
    }

    /// A pointer of `kind` (`"mouse"`, `"touch"`, `"pen"`) went down. A mouse and
    /// a finger never make a pinch: a new kind forgets the other pointers.
    pub fn down(&mut self, id: i32, x: f64, y: f64, kind: &str) {
        if self.kind != kind {
            self.pointers.clear();
            self.kind = kind.to_string();
        }
        self.pointers.retain(|p| p.0 != id);
        self.pointers.push((id, x, y));
    }

    /// A pointer moved.
    pub fn moved(&mut self, id: i32, x: f64, y: f64) -> GestureStep {
        let before = self.spread();
        let Some(pointer) = self.pointers.iter_mut().find(|p| p.0 == id) else {
            return GestureStep::None;
        };
        let (dx, dy) = (x - pointer.1, y - pointer.2);
        pointer.1 = x;
        pointer.2 = y;
        match (before, self.spread()) {
            (Some(a), Some(b)) => GestureStep::Pinch(b - a),
            _ if self.pointers.len() == 1 => GestureStep::Drag(dx, dy),
            _ => GestureStep::None,
        }
    }

    /// A pointer went up or was cancelled.
    pub fn up(&mut self, id: i32) {
        self.pointers.retain(|p| p.0 != id);
    }
}
