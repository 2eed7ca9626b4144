//! What the surface is configured with, chosen from what the surface offers
//! and what the device allows: a configuration wgpu refuses leaves the
//! surface unconfigured, and native wgpu then panics at the next frame's
//! `get_current_texture` (it has nowhere else to send the error).

/// `size` as the device can draw it: each side at least 1 and at most
/// `max_side` (the device's `max_texture_dimension_2d`), so that a window
/// wider than the device's largest texture is drawn, cut to it, rather than
/// refused.
pub(crate) fn fit_size(size: (u32, u32), max_side: u32) -> (u32, u32) {
    let max_side = max_side.max(1);
    (size.0.clamp(1, max_side), size.1.clamp(1, max_side))
}

/// The configuration for `size`: the first format the surface offers, its
/// opaque alpha mode where it offers one (else the first it offers), FIFO
/// (which every surface offers); `Err` naming what the surface does not offer.
pub(crate) fn configuration(
    capabilities: &wgpu::SurfaceCapabilities,
    size: (u32, u32),
) -> Result<wgpu::SurfaceConfiguration, String> {
    let Some(&format) = capabilities.formats.first() else {
        return Err("the surface offers no format for this adapter".into());
    };
    let alpha_mode = if capabilities
        .alpha_modes
        .contains(&wgpu::CompositeAlphaMode::Opaque)
    {
        wgpu::CompositeAlphaMode::Opaque
    } else {
        match capabilities.alpha_modes.first() {
            Some(&mode) => mode,
            None => return Err("the surface offers no alpha mode for this adapter".into()),
        }
    };
    Ok(wgpu::SurfaceConfiguration {
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        format,
        width: size.0,
        height: size.1,
        present_mode: wgpu::PresentMode::Fifo,
        desired_maximum_frame_latency: 2,
        alpha_mode,
        view_formats: vec![],
        color_space: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offering(alpha_modes: Vec<wgpu::CompositeAlphaMode>) -> wgpu::SurfaceCapabilities {
        wgpu::SurfaceCapabilities {
            formats: vec![wgpu::TextureFormat::Bgra8Unorm],
            alpha_modes,
            ..Default::default()
        }
    }

    #[test]
    fn a_size_past_the_device_s_largest_texture_is_cut_to_it_and_never_zero() {
        assert_eq!(fit_size((8500, 300), 8192), (8192, 300));
        assert_eq!(fit_size((300, 9000), 8192), (300, 8192));
        assert_eq!(fit_size((0, 0), 8192), (1, 1));
        assert_eq!(fit_size((640, 480), 8192), (640, 480));
    }

    #[test]
    fn the_alpha_mode_is_one_the_surface_offers() {
        use wgpu::CompositeAlphaMode::*;
        let opaque = configuration(&offering(vec![PreMultiplied, Opaque]), (4, 4));
        assert_eq!(opaque.map(|c| c.alpha_mode), Ok(Opaque));
        let inherit = configuration(&offering(vec![Inherit, PreMultiplied]), (4, 4));
        assert_eq!(inherit.map(|c| c.alpha_mode), Ok(Inherit));
        let none = configuration(&offering(vec![]), (4, 4));
        assert!(none.unwrap_err().contains("alpha mode"));
        let no_format = wgpu::SurfaceCapabilities::default();
        assert!(configuration(&no_format, (4, 4))
            .unwrap_err()
            .contains("format"));
    }

    #[test]
    fn the_configuration_has_the_size_and_the_first_format() {
        let config = configuration(
            &offering(vec![wgpu::CompositeAlphaMode::Opaque]),
            (640, 480),
        )
        .expect("offered");
        assert_eq!((config.width, config.height), (640, 480));
        assert_eq!(config.format, wgpu::TextureFormat::Bgra8Unorm);
        assert_eq!(config.present_mode, wgpu::PresentMode::Fifo);
    }
}
