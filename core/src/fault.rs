//! Typed GPU faults: what went wrong, and where it came from.

use std::fmt;

use crate::str_search::{contains, find, find_byte, from, part};

/// The kind of a fault. The first three are the WebGPU error classes; the others
/// are failures the guard layer observes around them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// `GPUValidationError`: the call was invalid; fix the code.
    Validation,
    /// `GPUOutOfMemoryError`: the allocation was refused; shed or evict.
    OutOfMemory,
    /// `GPUInternalError`: the implementation failed (often a shader too complex).
    Internal,
    /// A JavaScript exception thrown synchronously by a WebGPU call (a `TypeError`
    /// from the bindings, for instance), or bad input refused before any GPU call.
    Exception,
    /// An async pipeline creation was rejected with a `GPUPipelineError`.
    Pipeline,
    /// The error-scope stack was misused (a pop without a push).
    ScopeStack,
    /// The device was lost, so the outcome of the work cannot be known.
    DeviceLost,
}

impl FaultKind {
    /// Every kind, in a stable order.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::Validation,
        FaultKind::OutOfMemory,
        FaultKind::Internal,
        FaultKind::Exception,
        FaultKind::Pipeline,
        FaultKind::ScopeStack,
        FaultKind::DeviceLost,
    ];

    /// The short name used in log lines and telemetry.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Validation => "validation",
            FaultKind::OutOfMemory => "out-of-memory",
            FaultKind::Internal => "internal",
            FaultKind::Exception => "exception",
            FaultKind::Pipeline => "pipeline",
            FaultKind::ScopeStack => "scope-stack",
            FaultKind::DeviceLost => "device-lost",
        }
    }

    /// Whether this is one of the three WebGPU error classes.
    pub fn is_gpu_error(self) -> bool {
        matches!(
            self,
            FaultKind::Validation | FaultKind::OutOfMemory | FaultKind::Internal
        )
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Rust source location, captured with `#[track_caller]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// Source file.
    pub file: &'static str,
    /// Line, 1-based.
    pub line: u32,
    /// Column, 1-based.
    pub column: u32,
}

impl CallSite {
    /// The call site of the function that called this one (through `#[track_caller]`).
    #[track_caller]
    pub fn here() -> Self {
        let location = std::panic::Location::caller();
        CallSite {
            file: location.file(),
            line: location.line(),
            column: location.column(),
        }
    }
}

impl fmt::Display for CallSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Where a fault was observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The labelled phase whose scope caught the fault.
    pub phase: Option<String>,
    /// The label of the object involved, where known.
    pub object: Option<String>,
    /// The frame number, for frame scopes and uncaptured errors.
    pub frame: Option<u64>,
    /// The Rust call site, for per-call scopes.
    pub call_site: Option<CallSite>,
}

/// A GPU fault with its kind, the implementation's message and its origin.
///
/// In the browser a thrown JavaScript value converts into a fault of kind
/// [`FaultKind::Exception`] (`From<JsValue>`), so `?` works on a raw web-sys
/// call that catches, such as `surface.get_current_texture()?` in a frame.
///
/// Its fields ([`FaultRecord`]) are read and changed through it: `kind`
/// ([`FaultKind`], `Copy`, to `match` on), `message` (the implementation's
/// words), `origin` (the `phase`, the `object`'s label, the `frame` number, the
/// `call_site`, each where known: a frame's faults carry a frame, not a phase),
/// `hint` and `related`. They live behind one pointer, so a `Result<T, Fault>`
/// is as small as `T` or a pointer. [`Fault::object_label`] is the object's
/// label, or else one the message quotes. Take the fields out with
/// [`Fault::into_record`], or one with `std::mem::take(&mut fault.message)`.
///
/// ```
/// use webgpu_guard_core::{Fault, FaultKind, FaultRecord};
/// let fault = Fault::new(FaultKind::Validation, "Offset (3) is not a multiple of 4.")
///     .in_phase("upload")
///     .on_object("vertices");
/// assert!(fault.to_string().starts_with("validation error in phase \"upload\" on \"vertices\""));
/// assert!(fault.hint.is_some());
/// assert_eq!(fault.origin.phase.as_deref(), Some("upload"));
/// let FaultRecord { kind, message, .. } = fault.into_record();
/// assert_eq!((kind, message.as_str()), (FaultKind::Validation, "Offset (3) is not a multiple of 4."));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Fault(Box<FaultRecord>);

/// What a [`Fault`] holds, read and changed through the fault itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRecord {
    /// What kind of failure this is.
    pub kind: FaultKind,
    /// The message, unchanged.
    pub message: String,
    /// Where it was caught.
    pub origin: Origin,
    /// A hint for a well-known message, kept apart from the message itself.
    pub hint: Option<&'static str>,
    /// Other faults caught at the same time (another scope of the same phase).
    pub related: Vec<Fault>,
    /// Where the engine's message does not say which object failed and the
    /// fault names none: the calls of its phase that could have failed, as
    /// (label, call site) (empty where the level records no calls; the
    /// per-call level names the one). `None` when the fault names its object
    /// or the question does not arise.
    pub suspects: Option<Vec<(String, CallSite)>>,
    /// Whether the fault already went to the application's fault sink: a fault is
    /// reported once, where it is observed, even when it is also returned as `Err`.
    reported: bool,
}

impl std::ops::Deref for Fault {
    type Target = FaultRecord;
    fn deref(&self) -> &FaultRecord {
        &self.0
    }
}

impl std::ops::DerefMut for Fault {
    fn deref_mut(&mut self) -> &mut FaultRecord {
        &mut self.0
    }
}

impl fmt::Debug for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Fault {
    /// A fault of `kind` with `message`; the hint is filled in from the message.
    pub fn new(kind: FaultKind, message: impl Into<String>) -> Self {
        Fault::hinted(kind, message.into())
    }

    /// What the fault holds, its fields to move out
    /// (`let FaultRecord { message, origin, .. } = fault.into_record();`).
    pub fn into_record(self) -> FaultRecord {
        *self.0
    }

    fn hinted(kind: FaultKind, message: String) -> Self {
        let mut fault = Fault::of(kind, message);
        fault.hint = hint_for(&fault.message);
        fault
    }

    /// A fault without its hint, for the hot path of the error net: the hint is
    /// looked up only if a line is written ([`crate::fault_log::FaultLog`]).
    pub fn without_hint(kind: FaultKind, message: impl Into<String>) -> Self {
        Fault::of(kind, message.into())
    }

    fn of(kind: FaultKind, message: String) -> Self {
        Fault(Box::new(FaultRecord {
            kind,
            message,
            origin: Origin::default(),
            hint: None,
            related: Vec::new(),
            suspects: None,
            reported: false,
        }))
    }

    /// Whether the fault already went to the fault sink.
    pub fn is_reported(&self) -> bool {
        self.reported
    }

    /// Marks the fault, and the faults related to it, as handed to the fault
    /// sink (so nobody reports them again).
    pub fn mark_reported(mut self) -> Self {
        self.reported = true;
        self.related = std::mem::take(&mut self.related)
            .into_iter()
            .map(Fault::mark_reported)
            .collect();
        self
    }

    /// The fault again, with its related faults, not marked reported (a
    /// fault handed back to the caller after it was reported).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    #[doc(hidden)]
    pub fn unreported(mut self) -> Self {
        self.clear_reported();
        self
    }

    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    fn clear_reported(&mut self) {
        self.reported = false;
        for related in &mut self.related {
            related.clear_reported();
        }
    }

    /// The label telemetry groups by: the object label the library knows
    /// (recorded at the origin); else the label of the object the message
    /// says failed ([`label_in_message`]: Dawn's `[Buffer "label"]`, native
    /// wgpu's `In Device::create_x, label = 'label'`; not wgpu's `Buffer with
    /// 'label' label`, which names an argument as readily as the culprit);
    /// else the phase the fault was caught in, which the library always knows
    /// for scoped faults.
    pub fn label_for_grouping(&self) -> Option<String> {
        self.object_label().or_else(|| self.origin.phase.clone())
    }

    /// Sets the phase label.
    pub fn in_phase(mut self, phase: impl Into<String>) -> Self {
        self.origin.phase = Some(phase.into());
        self
    }

    /// Sets the object label.
    pub fn on_object(mut self, object: impl Into<String>) -> Self {
        self.origin.object = Some(object.into());
        self
    }

    /// Sets the frame number.
    pub fn in_frame(mut self, frame: u64) -> Self {
        self.origin.frame = Some(frame);
        self
    }

    /// Sets the Rust call site.
    pub fn at(mut self, call_site: CallSite) -> Self {
        self.origin.call_site = Some(call_site);
        self
    }

    /// Attaches faults caught together with this one.
    pub fn with_related(mut self, related: Vec<Fault>) -> Self {
        self.related = related;
        self
    }

    /// Keeps with this fault (a module's compile errors) what the module's own
    /// scopes caught beside them, as related faults: an out-of-memory or
    /// internal error, a lost device. Their validation errors are left out:
    /// they are the same compile errors in the engine's words.
    pub fn with_caught_beside(mut self, caught: Option<Fault>) -> Self {
        if let Some(mut first) = caught {
            let mut beside = std::mem::take(&mut first.related);
            beside.insert(0, first);
            for fault in beside {
                if fault.kind != FaultKind::Validation {
                    self.related.push(fault);
                }
            }
        }
        self
    }

    /// The object label: the one recorded at the origin, or the first label quoted in
    /// the message (`[Buffer "vertices"]`), or `None`.
    pub fn object_label(&self) -> Option<String> {
        self.origin
            .object
            .clone()
            .or_else(|| label_in_message(&self.message))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error", self.kind)?;
        if let Some(phase) = &self.origin.phase {
            write!(f, " in phase \"{phase}\"")?;
        }
        if let Some(object) = &self.origin.object {
            write!(f, " on \"{object}\"")?;
        }
        if let Some(frame) = self.origin.frame {
            write!(f, " at frame {frame}")?;
        }
        if let Some(site) = &self.origin.call_site {
            write!(f, " (created at {site})")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(hint) = self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        match self.suspects.as_deref() {
            None => {}
            Some([]) => write!(
                f,
                "\n  the engine's message does not say which call failed: a phase per call (or webgpu-guard's per-call level) names it"
            )?,
            Some([(label, site)]) => write!(
                f,
                "\n  the engine's message names no object; the one labelled object the phase made through the guard is \"{label}\" ({site}); a call made on the device directly is not recorded (a phase per call, or webgpu-guard's per-call level, is sure)"
            )?,
            Some(suspects) => {
                write!(
                    f,
                    "\n  the engine's message does not say which call failed; one of"
                )?;
                for (label, site) in suspects {
                    write!(f, " \"{label}\" ({site}),")?;
                }
                write!(f, " a phase per call (or webgpu-guard's per-call level) names it")?;
            }
        }
        for other in &self.related {
            write!(f, "\n  also: {other}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Fault {}

/// A hint for the validation messages that recur (seed 004), or `None`.
pub fn hint_for(message: &str) -> Option<&'static str> {
    let lower = message.to_ascii_lowercase();
    let has = |needle: &str| contains(&lower, needle);
    if has("is not a multiple of") || has("is not aligned to") {
        Some("alignment: the number quoted is the alignment required (4 for index offsets and buffer sizes, 256 for dynamic uniform offsets and buffer-to-texture bytesPerRow)")
    } else if has("smaller than the minimum binding size")
        // wgpu (Firefox) words the same mismatch its own ways.
        || has("where the shader expects")
        || (has("binding size") && has("less than minimum"))
    {
        Some("the shader declares a struct larger than the bound buffer range: a field was added on one side only")
    } else if has("is not compatible with") || has("incompatible with") {
        Some("the pipeline layout and the bind group layout differ: check read-only vs read-write storage and the visibility of each binding")
    } else {
        None
    }
}

/// The label of the object a WebGPU message blames, or `None` when the message
/// does not say which object failed:
///
/// * the object being created, where the message names it: Dawn's
///   `[XDescriptor ""label""]` (as in `While calling
///   [Device].CreateBindGroup([BindGroupDescriptor ""group""])`);
/// * where the message speaks of a creation without naming what was created
///   (Dawn's `While calling [Device].CreateX(...)` without a labelled
///   descriptor), `None`: an object it quotes is an argument of the call (a
///   buffer a bind group binds), never the culprit;
/// * otherwise the first object Dawn quotes (`[Buffer "label"]`, `Destroyed
///   [Buffer "v"] used in submit`), skipping the device and the queue, which
///   every message names.
///
/// wgpu (Firefox) names objects only as `Buffer with 'label' label`, whether
/// the object failed or is an argument of what failed (`Binding size 8 of
/// Buffer with 'totals' label is less than minimum 16`, a bind group's
/// mistake): such a message does not say which object failed, and `None` is
/// returned (the fault lists the phase's calls instead; see
/// [`FaultRecord::suspects`]).
///
/// Native wgpu (wgpu-core's own messages) names the object being created in
/// its context line, `In Device::create_buffer, label = 'vertices'`, which is
/// read as such.
pub fn label_in_message(message: &str) -> Option<String> {
    if let Some(created) = dawn_descriptor_label(message).or_else(|| wgpu_created_label(message)) {
        return Some(created);
    }
    if speaks_of_a_creation(message) {
        return None;
    }
    dawn_label(message)
}

/// Whether `message` reports a failed creation (Dawn's `].CreateX(`, wgpu's
/// `In Device::create_x`).
fn speaks_of_a_creation(message: &str) -> bool {
    contains(message, "].Create") || contains(message, "Device::create_")
}

/// The label of native wgpu's `In Device::create_x, label = 'label'`: the
/// object being created.
fn wgpu_created_label(message: &str) -> Option<String> {
    const CREATE: &str = "In Device::create_";
    const LABEL: &str = ", label = '";
    let context = from(message, find(message, CREATE)?);
    let line = crate::str_search::first_line(context);
    let start = find(line, LABEL)? + LABEL.len();
    let label = from(line, start);
    let end = crate::str_search::rfind_byte(label, b'\'')?;
    let label = part(label, 0, end);
    (!label.is_empty()).then(|| label.to_string())
}

/// The label of the first labelled `[XDescriptor "label"]` of a Dawn message:
/// the object being created.
fn dawn_descriptor_label(message: &str) -> Option<String> {
    dawn_objects(message)
        .find(|(kind, label)| kind.ends_with("Descriptor") && !label.is_empty())
        .map(|(_, label)| label.to_string())
}

/// `text` without the double quotes at either end.
fn without_quotes(text: &str) -> &str {
    let start = text.bytes().position(|b| b != b'"').unwrap_or(text.len());
    let end = text
        .bytes()
        .rposition(|b| b != b'"')
        .map_or(start, |i| i + 1);
    part(text, start, end)
}

/// Dawn's `[Kind "label"]` objects of `message`, in order: (kind, label without
/// its quotes); brackets without a quote are skipped.
fn dawn_objects(message: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut rest = message;
    std::iter::from_fn(move || loop {
        let open = find_byte(rest, b'[')?;
        let after = from(rest, open + 1);
        let close = find_byte(after, b']')?;
        let inside = part(after, 0, close);
        rest = from(after, close + 1);
        let Some(q1) = find_byte(inside, b'"') else {
            continue;
        };
        let kind = part(inside, 0, q1).trim();
        let label = without_quotes(from(inside, q1).trim());
        return Some((kind, label));
    })
}

fn dawn_label(message: &str) -> Option<String> {
    dawn_objects(message)
        .find(|(kind, label)| *kind != "Device" && *kind != "Queue" && !label.is_empty())
        .map(|(_, label)| label.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_naming_no_object_points_at_the_phase_s_labelled_creations() {
        let site = CallSite::here();
        let with = |labels: &[&str]| {
            let mut fault = Fault::new(FaultKind::Validation, "Buffer usages are invalid.");
            fault.suspects = Some(labels.iter().map(|l| (l.to_string(), site)).collect());
            fault.to_string()
        };
        let one = with(&["only-one"]);
        assert!(
            one.contains("the phase made through the guard is \"only-one\""),
            "{one}"
        );
        assert!(one.contains("per-call"), "{one}");
        let two = with(&["a", "b"]);
        assert!(two.contains("one of \"a\""), "{two}");
        assert!(two.contains("\"b\""), "{two}");
        let none = with(&[]);
        assert!(none.contains("does not say which call failed"), "{none}");
    }

    #[test]
    fn a_fault_is_one_pointer_and_unreported_clears_every_level() {
        assert_eq!(
            std::mem::size_of::<Result<(), Fault>>(),
            std::mem::size_of::<usize>()
        );
        let deep = Fault::new(FaultKind::Internal, "deep").mark_reported();
        let middle = Fault::new(FaultKind::OutOfMemory, "middle")
            .with_related(vec![deep])
            .mark_reported();
        let top = Fault::new(FaultKind::Validation, "top")
            .with_related(vec![middle])
            .mark_reported()
            .unreported();
        assert!(!top.is_reported());
        assert!(!top.related[0].is_reported());
        assert!(!top.related[0].related[0].is_reported());
        assert_eq!(top.related[0].related[0].message, "deep");
    }

    #[test]
    fn compile_errors_keep_what_was_caught_beside_them_but_not_their_own_echo() {
        let compile = Fault::new(FaultKind::Validation, "shader:3:5 error: unknown type");
        let caught =
            Fault::new(FaultKind::Validation, "Error while parsing WGSL").with_related(vec![
                Fault::new(FaultKind::OutOfMemory, "out of memory"),
                Fault::new(FaultKind::Internal, "internal"),
            ]);
        let kept = compile.clone().with_caught_beside(Some(caught));
        let kinds: Vec<FaultKind> = kept.related.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [FaultKind::OutOfMemory, FaultKind::Internal]);
        assert_eq!(kept.message, compile.message);
        let lost_first = Fault::new(FaultKind::DeviceLost, "lost")
            .with_related(vec![Fault::new(FaultKind::Validation, "echo")]);
        let kept = compile.clone().with_caught_beside(Some(lost_first));
        assert_eq!(kept.related.len(), 1);
        assert_eq!(kept.related[0].kind, FaultKind::DeviceLost);
        assert!(compile.clone().with_caught_beside(None).related.is_empty());
    }

    #[test]
    fn quotes_come_off_both_ends_of_a_label_and_nothing_else() {
        assert_eq!(without_quotes("\"vertices\""), "vertices");
        assert_eq!(without_quotes("\"\"a\"b\"\""), "a\"b");
        assert_eq!(without_quotes("\"\"\""), "");
        assert_eq!(without_quotes(""), "");
        assert_eq!(without_quotes("\"é\""), "é");
    }

    #[test]
    fn hints_match_the_three_common_messages_without_touching_them() {
        let m = "Offset (3) is not a multiple of 4.";
        let fault = Fault::new(FaultKind::Validation, m);
        assert_eq!(fault.message, m);
        assert!(fault.hint.unwrap().contains("alignment"));
        assert!(hint_for(
            "Buffer is bound with size 16 where the shader expects 32 in group[0] compact index 0"
        )
        .unwrap()
        .contains("struct"));
        assert!(hint_for(
            "Binding size 16 of Buffer with 'sim-params' label is less than minimum 32"
        )
        .unwrap()
        .contains("struct"));
        assert!(
            hint_for("Binding size (16) is smaller than the minimum binding size (32).")
                .unwrap()
                .contains("struct")
        );
        assert!(
            hint_for("[BindGroupLayout] is not compatible with [PipelineLayout]")
                .unwrap()
                .contains("layout")
        );
        assert_eq!(hint_for("Texture size exceeds the limit"), None);
    }

    #[test]
    fn display_names_phase_object_frame_and_call_site() {
        let fault = Fault::new(FaultKind::OutOfMemory, "allocation failed")
            .in_phase("scene")
            .on_object("shadow-map")
            .in_frame(12)
            .at(CallSite {
                file: "src/a.rs",
                line: 3,
                column: 9,
            });
        let text = fault.to_string();
        assert_eq!(
            text,
            "out-of-memory error in phase \"scene\" on \"shadow-map\" at frame 12 (created at src/a.rs:3:9): allocation failed"
        );
    }

    #[test]
    fn labels_are_read_from_dawn_messages() {
        assert_eq!(
            label_in_message("Destroyed [Buffer \"vertices\"] used in submit."),
            Some("vertices".into())
        );
        assert_eq!(
            label_in_message("[Invalid CommandBuffer] from [CommandEncoder \"frame\"]"),
            Some("frame".into())
        );
        assert_eq!(label_in_message("no label here"), None);
        assert_eq!(
            label_in_message(
                "Allocation too large\n - While calling [Device \"dev\"].CreateTexture([TextureDescriptor \"\"probe\"\"])."
            ),
            Some("probe".into())
        );
        assert_eq!(label_in_message("[unterminated"), None);
        // wgpu (Firefox) names objects whether they failed or are arguments
        // of what failed: its messages do not say which object failed.
        assert_eq!(
            label_in_message(
                "Binding size 8 of Buffer with 'totals' label is less than minimum 16"
            ),
            None
        );
        assert_eq!(
            label_in_message(
                "In Device::create_bind_group\n    Buffer with 'sim-params' label is invalid"
            ),
            None
        );
        // Native wgpu names the object being created in its context line,
        // whatever its mistake names after.
        assert_eq!(
            label_in_message(
                "Validation Error\n\nCaused by:\n  In Device::create_bind_group, label = 'reduce-group'\n    Buffer with 'totals' label is too small\n"
            )
            .as_deref(),
            Some("reduce-group")
        );
        assert_eq!(
            label_in_message("In Device::create_buffer, label = 'it's'\n").as_deref(),
            Some("it's")
        );
        assert_eq!(
            label_in_message("In Device::create_buffer, label = ''\n"),
            None
        );
        // Dawn names the object being created in its descriptor, after the
        // buffer it binds.
        assert_eq!(
            label_in_message(
                "Binding size (8) of [Buffer \"totals\"] is smaller than the minimum binding size (16).\n - While validating entries[0] as a Buffer.\n - While validating [BindGroupDescriptor \"\"reduce-group\"\"] against [BindGroupLayout \"reduce-layout\"]\n - While calling [Device].CreateBindGroup([BindGroupDescriptor \"\"reduce-group\"\"])."
            )
            .as_deref(),
            Some("reduce-group")
        );
        assert_eq!(
            label_in_message(
                "Binding size (8) of [Buffer \"totals\"] is too small.\n - While calling [Device].CreateBindGroup([BindGroupDescriptor])."
            ),
            None
        );
    }

    #[test]
    fn grouping_never_depends_on_the_engine_quoting_labels() {
        // Dawn quotes the label; wgpu (Firefox) does not: the library's own
        // knowledge wins, and a phase stands in when nothing else is known.
        let dawn = "Invalid [Texture \"tex-lbl\"] usage";
        let wgpu = "Invalid usage flags TextureUsages(0x0)";
        let known = |m: &str| Fault::new(FaultKind::Validation, m).on_object("tex-lbl");
        assert_eq!(
            known(dawn).label_for_grouping(),
            known(wgpu).label_for_grouping()
        );
        let phased = Fault::new(FaultKind::Validation, wgpu).in_phase("textures");
        assert_eq!(phased.label_for_grouping().as_deref(), Some("textures"));
        assert_eq!(
            Fault::new(FaultKind::Validation, wgpu).label_for_grouping(),
            None
        );
    }

    #[test]
    fn call_site_points_at_the_caller() {
        let site = CallSite::here();
        assert!(site.file.ends_with("fault.rs"));
        assert!(site.line > 0);
    }
}
