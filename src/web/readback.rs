//! Mapping buffers, with a contract across loss: a map whose device is lost
//! (or whose buffer a recovery destroyed, or that is unmapped before it
//! settles) ends in an `Err` naming the buffer and the cause, never in an
//! unhandled rejection or a trap, and a map that resolves on a device known to
//! be lost is not read as data.
//!
//! The methods are on [`GuardedDevice`]: [`GuardedDevice::read_buffer`] (map,
//! copy out, unmap), [`GuardedDevice::map_async`],
//! [`GuardedDevice::get_mapped_range`] and [`GuardedDevice::unmap`]. The order
//! is WebGPU's: copy into a buffer with `MAP_READ | COPY_DST` usage, `submit`,
//! then map. The futures are `'static`: from `frame` (which does not await),
//! hand one to `wasm_bindgen_futures::spawn_local` and keep what it reads in
//! the application's state:
//!
//! ```no_run
//! # use std::{cell::RefCell, rc::Rc};
//! # use webgpu_guard::prelude::*;
//! # struct Resources { results: Tracked<web_sys::GpuBuffer>, staging: Tracked<web_sys::GpuBuffer> }
//! # struct Reduce { last_read: Rc<RefCell<Option<Vec<u8>>>> }
//! # impl Reduce {
//! fn read_back(&self, gpu: &GpuContext, r: &Resources) -> Result<(), Fault> {
//!     let encoder = gpu.device.create_command_encoder("readback")?;
//!     encoder.copy_buffer_to_buffer(&r.results, 0, &r.staging, 0, 16)?;
//!     gpu.device.submit(&[encoder.finish()?])?;
//!     let read = gpu.device.read_buffer(&r.staging, 0, 16);
//!     let into = self.last_read.clone();
//!     wasm_bindgen_futures::spawn_local(async move {
//!         if let Ok(bytes) = read.await {
//!             *into.borrow_mut() = Some(bytes);
//!         } // an Err was a loss or a destroyed buffer: nothing to read
//!     });
//!     Ok(())
//! }
//! # }
//! ```
//!
//! `spawn_local` is `wasm-bindgen-futures`' (list it, at the version this
//! crate uses). A staging buffer whose read is still pending cannot be copied
//! into again (a validation error: it is mapped, or about to be): keep a flag
//! in the application's state and skip the copy while a read is in flight, or
//! use a staging buffer per read. For state that must survive a loss,
//! [`crate::web::snapshot::GpuSnapshot`] does all this every N frames.

use web_sys::GpuBuffer;

use crate::fault::{CallSite, Fault, FaultKind};
use crate::usage::MapModes;
use crate::web::commands::{size_or_rest, try_get_mapped_range, try_map_async, try_unmap};
use crate::web::device::GuardedDevice;
use crate::web::encoder::thrown;
use crate::web::js::label_of;

/// The fault of a map on the lost device of the buffer labelled `label`.
fn lost(label: &str, site: CallSite) -> Fault {
    Fault::new(
        FaultKind::DeviceLost,
        format!("mapAsync: the device of \"{label}\" is lost: nothing was read"),
    )
    .on_object(label)
    .at(site)
}

/// A map in flight: dropped before it settled (its future dropped), it unmaps
/// the buffer, which rejects the map and leaves the buffer usable.
struct UnmapIfDropped(Option<GpuBuffer>);

impl UnmapIfDropped {
    /// The map settled: the buffer is the caller's again.
    fn settled(mut self) {
        self.0 = None;
    }
}

impl Drop for UnmapIfDropped {
    fn drop(&mut self) {
        if let Some(buffer) = self.0.take() {
            let _ = try_unmap(buffer.as_ref());
        }
    }
}

impl GuardedDevice {
    /// `buffer.mapAsync(mode, offset, size)`; `size` `None`: to the end. `Err`
    /// names the buffer and why: [`FaultKind::DeviceLost`] when the device is
    /// lost (before, during or as the map settles), [`FaultKind::Exception`]
    /// otherwise (the buffer destroyed or unmapped first, a bad range).
    ///
    /// Like every Rust future, it does nothing until polled: the map starts at
    /// the first poll. Dropped before it completes (a `?` before it is spawned,
    /// a `select!`, a cancelled task), it unmaps the buffer, which stays
    /// usable: the next map, or a copy into it, works.
    #[track_caller]
    pub fn map_async(
        &self,
        buffer: &GpuBuffer,
        mode: MapModes,
        offset: u64,
        size: Option<u64>,
    ) -> impl std::future::Future<Output = Result<(), Fault>> + 'static {
        let site = CallSite::here();
        let device = self.clone();
        let label = label_of(buffer);
        let buffer = buffer.clone();
        async move {
            let promise = try_map_async(
                buffer.as_ref(),
                mode.bits(),
                offset as f64,
                size_or_rest(size),
            );
            // Handled from now on, even if this future is dropped.
            let settled = crate::web::wait::settled(&promise);
            let in_flight = UnmapIfDropped(Some(buffer.clone()));
            let result = match settled.await {
                Err(_) if device.is_lost() => Err(lost(&label, site)),
                Err(e) => Err(thrown(&label, "mapAsync", site, e)),
                Ok(_) if device.is_lost() => {
                    // Mapped on a dead device: let it go unmapped, read nothing.
                    let _ = try_unmap(buffer.as_ref());
                    Err(lost(&label, site))
                }
                Ok(_) => Ok(()),
            };
            in_flight.settled();
            result
        }
    }

    /// `buffer.getMappedRange(offset, size)`, once [`Self::map_async`] is done.
    #[track_caller]
    pub fn get_mapped_range(
        &self,
        buffer: &GpuBuffer,
        offset: u64,
        size: Option<u64>,
    ) -> Result<js_sys::ArrayBuffer, Fault> {
        let site = CallSite::here();
        try_get_mapped_range(buffer.as_ref(), offset as f64, size_or_rest(size))
            .map_err(|e| thrown(&label_of(buffer), "getMappedRange", site, e))
    }

    /// `buffer.unmap()`.
    #[track_caller]
    pub fn unmap(&self, buffer: &GpuBuffer) -> Result<(), Fault> {
        let site = CallSite::here();
        try_unmap(buffer.as_ref()).map_err(|e| thrown(&label_of(buffer), "unmap", site, e))
    }

    /// Reads `size` bytes of `buffer` from `offset` (a `MAP_READ` buffer the
    /// GPU copied into): maps it, copies the bytes out and unmaps it, on every
    /// path. The errors of [`Self::map_async`]. Nothing happens until it is
    /// polled, and a read dropped mid-flight leaves the buffer unmapped.
    #[track_caller]
    pub fn read_buffer(
        &self,
        buffer: &GpuBuffer,
        offset: u64,
        size: u64,
    ) -> impl std::future::Future<Output = Result<Vec<u8>, Fault>> + 'static {
        let site = CallSite::here();
        let mapped = self.map_async(buffer, MapModes::READ, offset, Some(size));
        let (device, buffer) = (self.clone(), buffer.clone());
        async move {
            mapped.await?;
            let bytes = try_get_mapped_range(buffer.as_ref(), offset as f64, size as f64)
                .map(|range| js_sys::Uint8Array::new(&range).to_vec())
                .map_err(|e| thrown(&label_of(&buffer), "getMappedRange", site, e));
            let unmapped = try_unmap(buffer.as_ref());
            let bytes = bytes?;
            if device.is_lost() {
                return Err(lost(&label_of(&buffer), site));
            }
            unmapped.map_err(|e| thrown(&label_of(&buffer), "unmap", site, e))?;
            Ok(bytes)
        }
    }
}
