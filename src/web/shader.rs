//! Shader modules with their compiler messages read and formatted with carets.

use wasm_bindgen::JsCast;
use web_sys::{
    GpuCompilationMessage, GpuPipelineLayout, GpuShaderModule, GpuShaderModuleCompilationHint,
    GpuShaderModuleDescriptor,
};

use crate::fault::{Fault, FaultKind};
use crate::shader_diag::{CompilationMessage, MessageType, ShaderDiagnostics};
use crate::web::alloc::Tracked;
use crate::web::device::GuardedDevice;
use crate::web::js::{describe, enum_str};
use crate::web::log;
use crate::web::scope::{wait_all, ErrorScope, Filter};

/// A module that compiled, with any warnings and infos.
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
        kind: MessageType::parse(&enum_str(m.type_())),
        message: m.message(),
        line_num: clamp(m.line_num()),
        line_pos: clamp(m.line_pos()),
        offset: clamp(m.offset()),
        length: clamp(m.length()),
    }
}

impl GuardedDevice {
    /// Creates a module from WGSL `source`, reads `getCompilationInfo()` and returns
    /// the module with its warnings, or the formatted errors. `hints` pairs entry
    /// points with the pipeline layout they will be used with (`compilationHints`).
    /// Errors are written with `console.error`, warnings and infos with `console.warn`.
    pub async fn create_shader_module(
        &self,
        label: &str,
        source: &str,
        hints: &[(&str, &GpuPipelineLayout)],
    ) -> Result<CompiledShader, ShaderError> {
        let desc = GpuShaderModuleDescriptor::new(source);
        desc.set_label(label);
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
        // The module's own validation error is expected when the WGSL is wrong: keep
        // it out of the uncaptured-error net, the compiler messages say more.
        let scope = ErrorScope::push(self, Filter::Validation);
        let created = self.track(label, source.len() as u64, || {
            Ok(self.raw().create_shader_module(&desc))
        });
        let pop = scope.close();
        let fail = |fault: Fault| ShaderError {
            diagnostics: ShaderDiagnostics::new(label, source, Vec::new()),
            fault: fault.on_object(label),
        };
        let module = match created {
            Ok(module) => module,
            Err(fault) => {
                let _ = wait_all(vec![pop]).await;
                return Err(fail(fault));
            }
        };
        let info = wasm_bindgen_futures::JsFuture::from(
            module
                .get_compilation_info()
                .unchecked_into::<js_sys::Promise>(),
        );
        let (info, popped) = (info.await, wait_all(vec![pop]).await);
        let info = info.map_err(|e| fail(Fault::new(FaultKind::Exception, describe(&e))))?;
        let list: js_sys::Array = js_sys::Reflect::get(&info, &"messages".into())
            .map(|v| v.unchecked_into())
            .unwrap_or_default();
        let messages: Vec<CompilationMessage> = list
            .iter()
            .map(|m| read_message(m.unchecked_ref::<GpuCompilationMessage>()))
            .collect();
        let diagnostics = ShaderDiagnostics::new(label, source, messages);
        for (raw, text) in diagnostics.messages.iter().zip(&diagnostics.formatted) {
            match raw.kind {
                MessageType::Error => log::error(text),
                _ => log::warn(text),
            }
        }
        let scope_fault = popped.into_iter().next().and_then(|p| match p {
            Ok(p) => p.error,
            Err(f) => Some(f),
        });
        if diagnostics.has_errors() || scope_fault.is_some() {
            let message = if diagnostics.has_errors() {
                diagnostics.to_string()
            } else {
                scope_fault.map(|f| f.message).unwrap_or_default()
            };
            return Err(ShaderError {
                fault: Fault::new(FaultKind::Validation, message).on_object(label),
                diagnostics,
            });
        }
        Ok(CompiledShader {
            module,
            diagnostics,
        })
    }
}
