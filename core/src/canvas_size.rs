//! The drawing buffer a canvas needs: its displayed size in device pixels,
//! clamped to what the device can render to. Pure: the browser layer observes
//! the canvas (a `ResizeObserver`) and asks here.

/// What a `ResizeObserver` saw of a canvas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObservedSize {
    /// The content box, in CSS pixels.
    pub css_width: f64,
    /// The content box, in CSS pixels.
    pub css_height: f64,
    /// The content box in device pixels (`devicePixelContentBoxSize`), where the
    /// engine reports it: exact, with no rounding to guess.
    pub device_pixels: Option<(u32, u32)>,
}

/// The drawing buffer for `observed` at `device_pixel_ratio`, scaled down (both
/// sides by one factor) until neither side exceeds `max_dimension`; `None` while the canvas is not displayed (a zero or
/// unknown size: the buffer keeps its size).
pub fn drawing_buffer_size(
    observed: ObservedSize,
    device_pixel_ratio: f64,
    max_dimension: u32,
) -> Option<(u32, u32)> {
    let max = max_dimension.max(1);
    let ratio = if device_pixel_ratio.is_finite() && device_pixel_ratio > 0.0 {
        device_pixel_ratio
    } else {
        1.0
    };
    let from_css = (
        (observed.css_width * ratio).round(),
        (observed.css_height * ratio).round(),
    );
    let (width, height) = match observed.device_pixels {
        // DevTools' device emulation at a scale above 1 reports the device box
        // in CSS pixels: a box equal to the CSS one at a ratio of 1.5 or more
        // cannot be device pixels (those are at least 1.5 times as many).
        Some((w, h))
            if ratio >= 1.5
                && (f64::from(w) - observed.css_width).abs() <= 1.0
                && (f64::from(h) - observed.css_height).abs() <= 1.0 =>
        {
            from_css
        }
        Some((w, h)) => (f64::from(w), f64::from(h)),
        None => from_css,
    };
    if !width.is_finite() || !height.is_finite() || width < 1.0 || height < 1.0 {
        return None;
    }
    // Too large for the device: both sides shrink by one factor (the picture
    // keeps its shape).
    let largest = width.max(height);
    let (width, height) = if largest > f64::from(max) {
        let factor = f64::from(max) / largest;
        (width * factor, height * factor)
    } else {
        (width, height)
    };
    let side = |v: f64| (v.round() as u32).clamp(1, max);
    Some((side(width), side(height)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_box_in_css_pixels_under_device_emulation_is_scaled_by_the_ratio() {
        let emulated = ObservedSize {
            css_width: 480.0,
            css_height: 360.0,
            device_pixels: Some((480, 360)),
        };
        assert_eq!(drawing_buffer_size(emulated, 2.0, 8192), Some((960, 720)));
        // At a ratio of 1 (or close to it) the same box is exact.
        assert_eq!(drawing_buffer_size(emulated, 1.0, 8192), Some((480, 360)));
        assert_eq!(drawing_buffer_size(emulated, 1.25, 8192), Some((480, 360)));
        // A real device box at ratio 2 is kept as it is (no rounding to guess).
        let real = ObservedSize {
            device_pixels: Some((961, 719)),
            ..emulated
        };
        assert_eq!(drawing_buffer_size(real, 2.0, 8192), Some((961, 719)));
    }

    fn css(w: f64, h: f64) -> ObservedSize {
        ObservedSize {
            css_width: w,
            css_height: h,
            device_pixels: None,
        }
    }

    #[test]
    fn the_buffer_is_the_displayed_size_times_the_ratio() {
        assert_eq!(
            drawing_buffer_size(css(960.0, 600.0), 1.0, 8192),
            Some((960, 600))
        );
        assert_eq!(
            drawing_buffer_size(css(960.0, 600.0), 2.0, 8192),
            Some((1920, 1200))
        );
        assert_eq!(
            drawing_buffer_size(css(653.3, 408.3), 1.0, 8192),
            Some((653, 408))
        );
        assert_eq!(
            drawing_buffer_size(css(100.25, 50.75), 1.5, 8192),
            Some((150, 76))
        );
    }

    #[test]
    fn device_pixels_win_over_the_ratio_when_the_engine_gives_them() {
        let observed = ObservedSize {
            device_pixels: Some((1307, 817)),
            ..css(653.5, 408.5)
        };
        assert_eq!(drawing_buffer_size(observed, 2.0, 8192), Some((1307, 817)));
    }

    #[test]
    fn a_buffer_too_large_shrinks_to_the_device_limit_keeping_its_shape() {
        assert_eq!(
            drawing_buffer_size(css(5000.0, 100.0), 2.0, 8192),
            Some((8192, 164))
        );
        assert_eq!(
            drawing_buffer_size(css(2000.0, 8000.0), 2.0, 8192),
            Some((2048, 8192))
        );
        assert_eq!(
            drawing_buffer_size(css(3000.0, 3000.0), 3.0, 8192),
            Some((8192, 8192))
        );
        assert_eq!(drawing_buffer_size(css(10.0, 10.0), 1.0, 0), Some((1, 1)));
    }

    #[test]
    fn a_canvas_not_displayed_keeps_its_buffer() {
        assert_eq!(drawing_buffer_size(css(0.0, 600.0), 1.0, 8192), None);
        assert_eq!(drawing_buffer_size(css(0.4, 0.4), 1.0, 8192), None);
        assert_eq!(drawing_buffer_size(css(f64::NAN, 10.0), 1.0, 8192), None);
        // A ratio the page cannot have reads as 1.
        assert_eq!(
            drawing_buffer_size(css(10.0, 10.0), f64::NAN, 8192),
            Some((10, 10))
        );
        assert_eq!(
            drawing_buffer_size(css(10.0, 10.0), -2.0, 8192),
            Some((10, 10))
        );
    }
}
