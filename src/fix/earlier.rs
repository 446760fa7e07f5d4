//! What the earlier fixes still in the journal put in by themselves. A fix for another RT core replaces it
//! rather than adding to it — an administrator who moves the RT core from 3 to 1 expects CPU 3 back in general
//! use — while what was there before any fix (the user's) stays. The same rule for every step that holds a CPU
//! list: the command line (boot/want.rs), irqbalance's banned list, the IRQs' affinities.

use super::ValueKind;
use super::journal::{self, Entry, Run};
use super::kind::value::SavedValue;
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

    /// The CPUs earlier fixes took out of a kernel CPU list or mask (an IRQ's affinity). `owner`: the IRQ's
    /// devices now (`ValueChange::owner`). IRQ numbers are given out again at each boot, so an entry is this
    /// IRQ's when it names the same devices, at whatever number; by number only when either side names none.
    pub(crate) fn removed_from_value(&self, path: &str, owner: Option<&str>) -> Vec<usize> {
        let cpus = |kind: ValueKind, v: &str| match kind {
            ValueKind::HexMask => mask::parse(v).unwrap_or_default(),
            ValueKind::CpuList => cpulist::parse(v).unwrap_or_default(),
            _ => Vec::new(),
        };
        let same = |v: &SavedValue| match (v.owner.as_deref(), owner) {
            (Some(was), Some(now)) => {
                was == now && v.path.rsplit('/').next() == path.rsplit('/').next()
            }
            _ => v.path == path,
        };
        let mut own: Vec<usize> = self
            .entries()
            .filter_map(|e| match e {
                Entry::Value(v) if same(v) => Some(v),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn irq(n: u32, owner: Option<&str>, previous: &str, written: &str) -> Entry {
        Entry::Value(SavedValue {
            path: format!("/proc/irq/{n}/smp_affinity_list"),
            previous: previous.into(),
            value_kind: ValueKind::CpuList,
            refusable: false,
            written: Some(written.into()),
            owner: owner.map(str::to_string),
        })
    }

    fn earlier(entries: Vec<Entry>) -> Earlier {
        Earlier {
            runs: vec![Run {
                version: 2,
                created: "2026-12-07T08:00:00Z".into(),
                core: 3,
                nic: None,
                steps: vec!["irq_affinity".into()],
                entries,
                after_restore: vec![],
                complete: true,
            }],
        }
    }

    #[test]
    fn an_irq_gets_back_what_an_earlier_fix_took_from_its_device_whatever_its_number_now() {
        // Earlier fixes took CPU 3 from the NIC's IRQ 28 and CPUs 2-3 from the disk's 29; the next boot gave
        // the NIC 29 and the disk 28 (the order the drivers probed in, as in the VM suite's igb guest).
        let e = earlier(vec![
            irq(28, Some("ens3-rx-0"), "0-3", "0-2"),
            irq(29, Some("ahci[0000:00:1f.2]"), "1-3", "1"),
        ]);
        let path = |n: u32| format!("/proc/irq/{n}/smp_affinity_list");
        assert_eq!(e.removed_from_value(&path(29), Some("ens3-rx-0")), vec![3]);
        assert_eq!(
            e.removed_from_value(&path(28), Some("ahci[0000:00:1f.2]")),
            vec![2, 3]
        );
        // A device no earlier fix touched gets nothing back, though its number is one fix wrote.
        assert_eq!(
            e.removed_from_value(&path(28), Some("virtio0-requests")),
            Vec::<usize>::new()
        );
        // With no devices on either side, the number is all there is.
        assert_eq!(e.removed_from_value(&path(28), None), vec![3]);
        let old = earlier(vec![irq(28, None, "0-3", "0-2")]);
        assert_eq!(
            old.removed_from_value(&path(28), Some("ens3-rx-0")),
            vec![3]
        );
        assert_eq!(
            old.removed_from_value(&path(29), Some("ens3-rx-0")),
            Vec::<usize>::new()
        );
    }
}
