//! The out-of-memory ladder: try a list of texture sizes, each inside its own
//! out-of-memory (and validation) scope, and keep the first that fits.

use web_sys::GpuTexture;

use crate::fault::{CallSite, Fault, FaultKind, Origin};
use crate::formats::TextureSizeLimits;
use crate::ladder::does_not_fit;
use crate::web::alloc::{CallScopes, Tracked};
use crate::web::device::GuardedDevice;
use crate::web::scope::{Filter, ScopeSet};
use crate::web::texture_spec::TextureSpec;

/// What the ladder obtained and what it had to give up on the way.
#[derive(Debug)]
pub struct LadderOutcome {
    /// The texture that fitted.
    pub texture: Tracked<GpuTexture>,
    /// The candidate that fitted (index into the list).
    pub chosen: usize,
    /// The spec that fitted.
    pub spec: TextureSpec,
    /// The candidates that failed, with their faults.
    pub failures: Vec<(TextureSpec, Fault)>,
}

impl LadderOutcome {
    /// Whether a smaller candidate than the first was used.
    pub fn degraded(&self) -> bool {
        self.chosen > 0
    }

    /// One line saying what was obtained.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "\"{}\": got {}x{}",
            self.spec.label, self.spec.width, self.spec.height
        );
        for (spec, fault) in &self.failures {
            line.push_str(&format!(
                "; {}x{} did not fit ({}: {})",
                spec.width, spec.height, fault.kind, fault.message
            ));
        }
        line
    }
}

impl GuardedDevice {
    /// Tries `candidates` in order, each inside its own scope set; a candidate that
    /// does not fit (an out-of-memory error, or a validation error of a size beyond
    /// the device's limits) is destroyed, written as a warning, and the next is
    /// tried. Works the same under every diagnostics level (no per-call scope is
    /// nested inside the ladder's own). Errs when none fits, naming every size
    /// tried; at once when the device is lost, or with the fault of any other
    /// failure (a wrong usage or format), which no smaller size would mend.
    #[track_caller]
    pub fn texture_ladder<'a>(
        &'a self,
        candidates: &'a [TextureSpec],
    ) -> impl std::future::Future<Output = Result<LadderOutcome, Fault>> + 'a {
        let site = CallSite::here();
        async move { self.run_ladder(candidates, site).await }
    }

    async fn run_ladder(
        &self,
        candidates: &[TextureSpec],
        site: CallSite,
    ) -> Result<LadderOutcome, Fault> {
        let mut failures: Vec<(TextureSpec, Fault)> = Vec::new();
        let raw_limits = self.raw().limits();
        let limits = TextureSizeLimits {
            max_2d: raw_limits.max_texture_dimension_2d(),
            max_3d: raw_limits.max_texture_dimension_3d(),
            max_layers: raw_limits.max_texture_array_layers(),
        };
        for (index, spec) in candidates.iter().enumerate() {
            let origin = Origin {
                object: Some(spec.label.clone()),
                call_site: Some(site),
                ..Origin::default()
            };
            let scopes = ScopeSet::push(self, &Filter::ALL).tagged(origin);
            let created = self.track_with(
                CallScopes::CallerScoped,
                site,
                &spec.label,
                spec.bytes(),
                || spec.create_on(self.raw()),
            );
            let outcome = scopes.pop().await;
            if outcome.device_lost {
                drop(created);
                return Err(self.report(
                    Fault::new(FaultKind::DeviceLost, "device lost during the ladder")
                        .on_object(&spec.label)
                        .at(site),
                ));
            }
            let fault = match (created, outcome.into_fault()) {
                (Ok(texture), None) => {
                    return Ok(LadderOutcome {
                        texture,
                        chosen: index,
                        spec: spec.clone(),
                        failures,
                    });
                }
                (Ok(texture), Some(fault)) => {
                    drop(texture);
                    fault
                }
                (Err(fault), _) => fault,
            };
            if !does_not_fit(fault.kind, &spec.shape(), &limits) {
                // A mistake: no smaller size mends it.
                return Err(self.report(fault));
            }
            self.faults().warn(&format!(
                "\"{}\" {}x{} does not fit, trying the next size: {}",
                spec.label, spec.width, spec.height, fault.message
            ));
            failures.push((spec.clone(), fault));
        }
        let tried: Vec<String> = failures
            .iter()
            .map(|(s, f)| format!("{}x{} ({})", s.width, s.height, f.kind))
            .collect();
        let label = candidates
            .first()
            .map(|s| s.label.clone())
            .unwrap_or_default();
        Err(self.report(
            Fault::new(
                FaultKind::OutOfMemory,
                format!("no size fits: tried {}", tried.join(", ")),
            )
            .on_object(label)
            .at(site)
            .with_related(failures.into_iter().map(|(_, f)| f).collect()),
        ))
    }
}
