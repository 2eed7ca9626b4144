//! The out-of-memory ladder: try a list of texture sizes, each inside its own
//! out-of-memory (and validation) scope, and keep the first that fits.

use web_sys::GpuTexture;

use crate::fault::{Fault, FaultKind};
use crate::web::alloc::{TextureSpec, Tracked};
use crate::web::device::GuardedDevice;
use crate::web::scope::{wait_all, ErrorScope, Filter};

/// What the ladder obtained and what it had to give up on the way.
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
    /// Tries `candidates` in order; a candidate whose creation raises an
    /// out-of-memory (or validation) error is destroyed and the next is tried.
    /// Errs when none fits, naming every size tried.
    pub async fn texture_ladder(&self, candidates: &[TextureSpec]) -> Result<LadderOutcome, Fault> {
        let mut failures: Vec<(TextureSpec, Fault)> = Vec::new();
        for (index, spec) in candidates.iter().enumerate() {
            let validation = ErrorScope::push(self, Filter::Validation);
            let oom = ErrorScope::push(self, Filter::OutOfMemory);
            let created = self.create_texture(spec);
            let pops = vec![oom.close(), validation.close()];
            let outcomes = wait_all(pops).await;
            let caught = outcomes.into_iter().find_map(|o| match o {
                Ok(p) => p.error,
                Err(f) => Some(f),
            });
            match (created, caught) {
                (Ok(texture), None) if !self.is_lost() => {
                    return Ok(LadderOutcome {
                        texture,
                        chosen: index,
                        spec: spec.clone(),
                        failures,
                    });
                }
                (Ok(texture), caught) => {
                    drop(texture);
                    let fault = caught.unwrap_or_else(|| {
                        Fault::new(FaultKind::DeviceLost, "device lost during allocation")
                    });
                    crate::web::log::warn(&format!(
                        "\"{}\" {}x{} does not fit, trying the next size: {}",
                        spec.label, spec.width, spec.height, fault.message
                    ));
                    failures.push((spec.clone(), fault.on_object(&spec.label)));
                }
                (Err(fault), _) => failures.push((spec.clone(), fault)),
            }
        }
        let tried: Vec<String> = failures
            .iter()
            .map(|(s, f)| format!("{}x{} ({})", s.width, s.height, f.kind))
            .collect();
        let label = candidates
            .first()
            .map(|s| s.label.clone())
            .unwrap_or_default();
        Err(Fault::new(
            FaultKind::OutOfMemory,
            format!("no size fits: tried {}", tried.join(", ")),
        )
        .on_object(label)
        .with_related(failures.into_iter().map(|(_, f)| f).collect()))
    }
}
