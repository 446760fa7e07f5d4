//! What the earlier fixes still in the journal put in by themselves. A fix for another RT core replaces it
//! rather than adding to it — an administrator who moves the RT core from 3 to 1 expects CPU 3 back in general
//! use — while what was there before any fix (the user's) stays. The same rule for every step that holds a CPU
//! list: the command line (boot/want.rs), irqbalance's banned list, the IRQs' affinities.

use super::ValueKind;
use super::journal::{self, Entry, Run};
use crate::host::Host;
use crate::parse::{cpulist, mask};
use crate::tunable::cmdline::boot;

/// The runs of the journal, oldest first (none where it cannot be read: fix refuses such a journal itself).
pub(crate) struct Earlier {
    runs: Vec<Run>,
}

impl Earlier {
    pub(crate) fn load(host: &Host) -> Earlier {
        let runs = journal::load_all(host)
            .unwrap_or_default()
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        Earlier { runs }
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.runs.iter().flat_map(|r| r.entries.iter())
    }

    /// The CPUs earlier fixes put into the list a file holds (`cpus` reads it) that it did not hold before them.
    pub(crate) fn added_to_file(
        &self,
        path: &str,
        cpus: impl Fn(&str) -> Vec<usize>,
    ) -> Vec<usize> {
        let text = |b: Option<&[u8]>| b.map(|b| cpus(&String::from_utf8_lossy(b)));
        let mut own: Vec<usize> = self
            .entries()
            .filter_map(|e| match e {
                Entry::File(f) if f.path == path => Some(f),
                _ => None,
            })
            .flat_map(|f| {
                let before = text(f.previous_bytes()).unwrap_or_default();
                let after = text(f.written_bytes()).unwrap_or_default();
                after.into_iter().filter(move |c| !before.contains(c))
            })
            .collect();
        own.sort_unstable();
        own.dedup();
        own
    }

    /// The CPUs earlier fixes took out of a kernel CPU list or mask (an IRQ's affinity).
    pub(crate) fn removed_from_value(&self, path: &str) -> Vec<usize> {
        let cpus = |kind: ValueKind, v: &str| match kind {
            ValueKind::HexMask => mask::parse(v).unwrap_or_default(),
            ValueKind::CpuList => cpulist::parse(v).unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut own: Vec<usize> = self
            .entries()
            .filter_map(|e| match e {
                Entry::Value(v) if v.path == path => Some(v),
                _ => None,
            })
            .flat_map(|v| {
                let after = cpus(v.value_kind, v.written.as_deref().unwrap_or_default());
                cpus(v.value_kind, &v.previous)
                    .into_iter()
                    .filter(move |c| !after.contains(c))
            })
            .collect();
        own.sort_unstable();
        own.dedup();
        own
    }

    /// The CPUs earlier fixes isolated on the kernel command line that the user's own parameters did not hold.
    pub(crate) fn cmdline_isolated(&self) -> Vec<usize> {
        let edits = self.entries().filter_map(|e| match e {
            Entry::File(f) => f
                .cmdline
                .as_ref()
                .map(|c| (c.added.as_slice(), c.replaced.as_slice())),
            _ => None,
        });
        boot::want::own_isolated(edits)
    }
}
