//! Shader modules with their compiler messages read and formatted with carets.

use wasm_bindgen::JsCast;
use web_sys::{
    GpuCompilationMessage, GpuPipelineLayout, GpuShaderModule, GpuShaderModuleCompilationHint,
    GpuShaderModuleDescriptor,
};

use crate::fault::{CallSite, Fault, FaultKind, Origin};
use crate::shader_diag::{CompilationMessage, MessageType, ShaderDiagnostics};
use crate::web::alloc::{CallScopes, Tracked};
use crate::web::bindings::try_create_shader_module;
use crate::web::device::GuardedDevice;
use crate::web::js::{describe, text_field};
use crate::web::scope::{tag_fault, Filter, ScopeSet};

/// A module that compiled, with any warnings and infos.
#[derive(Debug)]
pub struct CompiledShader {
    /// The module.
    pub module: Tracked<GpuShaderModule>,
    /// Its messages (warnings and infos; no errors).
    pub diagnostics: ShaderDiagnostics,
}

/// A module that did not compile: no pipeline may be built on it.
#[derive(Debug, Clone)]
pub struct ShaderError {
    /// The formatted messages.
    pub diagnostics: ShaderDiagnostics,
    /// A fault naming the module, whose message is the formatted diagnostics.
    pub fault: Fault,
}

impl std::fmt::Display for ShaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.fault)
    }
}

impl From<ShaderError> for Fault {
    fn from(error: ShaderError) -> Fault {
        error.fault
    }
}

fn read_message(m: &GpuCompilationMessage) -> CompilationMessage {
    let clamp = |v: f64| {
        if v.is_finite() && v > 0.0 {
            v.min(u32::MAX as f64) as u32
        } else {
            0
        }
    };
    CompilationMessage {
        kind: MessageType::parse(&text_field(m, "type")),
        message: m.message(),
        line_num: clamp(m.line_num()),
        line_pos: clamp(m.line_pos()),
        offset: clamp(m.offset()),
        length: clamp(m.length()),
    }
}

impl GuardedDevice {
    /// Creates a module from WGSL `source`, reads `getCompilationInfo()` and returns
    /// the module with its warnings, or the formatted errors (`label:line:col`, the
    /// source line, a caret underline). `hints` pairs entry points with the
    /// pipeline layout they will be used with (`compilationHints`).
    ///
    /// Errors reach the fault sink once, as one fault naming the module; warnings
    /// and infos go through the same limiter. The module's own validation error is
    /// caught by the module's scope set (no per-call scope is nested inside it,
    /// whatever the diagnostics level), so it is not reported a second time.
    /// The error is a [`ShaderError`], which `?` turns into a [`Fault`] in a
    /// `build`.
    #[track_caller]
    pub fn create_shader_module<'a>(
        &'a self,
        label: &'a str,
        source: &'a str,
        hints: &'a [(&'a str, &'a GpuPipelineLayout)],
    ) -> impl std::future::Future<Output = Result<CompiledShader, ShaderError>> + 'a {
        let site = CallSite::here();
        async move { self.compile(label, source, hints, site).await }
    }

    async fn compile(
        &self,
        label: &str,
        source: &str,
        hints: &[(&str, &GpuPipelineLayout)],
        site: CallSite,
    ) -> Result<CompiledShader, ShaderError> {
        let desc = GpuShaderModuleDescriptor::new(source);
        crate::web::text::set_label(&desc, label);
        if !hints.is_empty() {
            let list: Vec<GpuShaderModuleCompilationHint> = hints
                .iter()
                .map(|(entry, layout)| {
                    let hint = GpuShaderModuleCompilationHint::new(entry);
                    hint.set_layout(layout);
                    hint
                })
                .collect();
            desc.set_compilation_hints(&list);
        }
        let origin = Origin {
            object: Some(label.to_string()),
            call_site: Some(site),
            ..Origin::default()
        };
        let fail = |fault: Fault, diagnostics: ShaderDiagnostics| ShaderError {
            diagnostics,
            fault: self.report(tag_fault(fault, &origin)),
        };
        let scopes = ScopeSet::push(self, &Filter::ALL).tagged(origin.clone());
        let created = self.track_with(
            CallScopes::CallerScoped,
            site,
            label,
            source.len() as u64,
            || try_create_shader_module(self.raw(), &desc),
        );
        let pops = scopes.close_probed();
        let module = match created {
            Ok(module) => module,
            Err(mut fault) => {
                // What the scopes caught goes with the creation's own fault.
                fault.related.extend(pops.wait().await.take_faults());
                return Err(fail(
                    fault,
                    ShaderDiagnostics::new(label, source, Vec::new()),
                ));
            }
        };
        let info_promise: js_sys::Promise = module.get_compilation_info().unchecked_into();
        let info = wasm_bindgen_futures::JsFuture::from(info_promise);
        let (info, outcome) = (info.await, pops.wait().await);
        let info = match info {
            Ok(info) => info,
            Err(e) => {
                return Err(fail(
                    Fault::new(FaultKind::Exception, describe(&e)),
                    ShaderDiagnostics::new(label, source, Vec::new()),
                ))
            }
        };
        let list: js_sys::Array = js_sys::Reflect::get(&info, &"messages".into())
            .map(|v| v.unchecked_into())
            .unwrap_or_default();
        let messages: Vec<CompilationMessage> = list
            .iter()
            .map(|m| read_message(m.unchecked_ref::<GpuCompilationMessage>()))
            .collect();
        let diagnostics = ShaderDiagnostics::new(label, source, messages);
        // Warnings as warnings, infos as notes; errors go in the one fault.
        for (raw, text) in diagnostics.messages.iter().zip(&diagnostics.formatted) {
            match raw.kind {
                MessageType::Warning => self.faults().warn(text),
                MessageType::Info => self.faults().note(text),
                MessageType::Error => {}
            }
        }
        let device_lost = outcome.device_lost;
        let scope_fault = outcome.into_fault();
        // What the scopes caught beside compile errors (out of memory, an
        // internal error, a lost device) goes with them.
        let fault = match diagnostics.has_errors() {
            true => Some(
                Fault::new(FaultKind::Validation, diagnostics.to_string())
                    .with_caught_beside(scope_fault),
            ),
            false => scope_fault,
        };
        if let Some(fault) = fault {
            return Err(fail(fault, diagnostics));
        }
        if device_lost {
            return Err(fail(
                Fault::new(FaultKind::DeviceLost, "device lost while compiling"),
                diagnostics,
            ));
        }
        Ok(CompiledShader {
            module,
            diagnostics,
        })
    }
}
