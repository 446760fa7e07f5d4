//! What a run reads and writes through tracefs once it is set up (tracefs.rs): the consuming readers, text
//! (trace_pipe) or binary (trace_pipe_raw) with what decoding the binary pages needs, the kernel's task names, and
//! trace_marker for the RT loop's one write per cycle.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

use super::{TraceError, Tracefs};
use crate::parse::ringbuf;
use crate::trace::raw::{NoRaw, Schema, Symbols};

impl Tracefs {
    /// The consuming reader of one CPU (or with None, of all, merged in time order), non-blocking: a blocked
    /// reader would be woken by irq_work on the RT CPU.
    pub(crate) fn pipe(&self, cpu: Option<usize>) -> Result<File, TraceError> {
        let rel = match cpu {
            Some(cpu) => format!("per_cpu/cpu{cpu}/trace_pipe"),
            None => "trace_pipe".to_string(),
        };
        let p = self.host.path(&self.abs(&rel));
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .map_err(|e| TraceError::Io(p.display().to_string(), e))
    }

    /// What the raw reader needs: the page layout, the formats of the enabled events and of ftrace/print (the
    /// marker), the kernel's symbols. Err: why the text reader must be used instead.
    pub(crate) fn raw_schema(&self) -> Result<Schema, NoRaw> {
        // One read: the kernel answers only a read at offset 0 (a second read returns 0, so a short first read
        // would cut it).
        let p = self.host.path(&self.abs("events/header_page"));
        let mut buf = vec![0u8; 64 * 1024];
        let n = File::open(&p)
            .and_then(|mut f| f.read(&mut buf))
            .map_err(|source| NoRaw::Open {
                path: p.display().to_string(),
                source,
            })?;
        let header =
            ringbuf::page_header(&String::from_utf8_lossy(&buf[..n])).ok_or(NoRaw::HeaderPage)?;
        let mut formats = Vec::new();
        for e in self
            .enabled
            .iter()
            .map(String::as_str)
            .chain(["ftrace/print"])
        {
            let f = self.read(&format!("events/{e}/format"))?;
            let f = ringbuf::format(&f).ok_or_else(|| NoRaw::Format(e.to_string()))?;
            formats.push(f);
        }
        let syms = self.host.read("/proc/kallsyms").unwrap_or_default();
        Schema::new(header, formats, Symbols::parse(&syms))
    }

    /// The consuming binary readers of `cpus`, non-blocking.
    pub(crate) fn raw_pipes(&self, cpus: &[usize]) -> Result<Vec<(usize, File)>, NoRaw> {
        cpus.iter()
            .map(|&c| {
                let p = self
                    .host
                    .path(&self.abs(&format!("per_cpu/cpu{c}/trace_pipe_raw")));
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&p)
                    .map(|f| (c, f))
                    .map_err(|source| NoRaw::Open {
                        path: p.display().to_string(),
                        source,
                    })
            })
            .collect()
    }

    /// The kernel's pid → task name cache (for raw events of tasks that did not switch in the window).
    pub(crate) fn saved_cmdlines(&self) -> String {
        self.read("saved_cmdlines").unwrap_or_default()
    }

    /// trace_marker, for the RT loop's one write per cycle.
    pub(crate) fn marker(&self) -> Result<File, TraceError> {
        let p = self.host.path(&self.abs("trace_marker"));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .map_err(|e| TraceError::Io(p.display().to_string(), e))
    }
}

/// Reads what is in `f` now (non-blocking), appending to `buf`; false once the pipe is empty.
pub(crate) fn drain(f: &mut File, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 64 * 1024];
    match f.read(&mut chunk) {
        Ok(0) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
        Err(_) => false,
    }
}
