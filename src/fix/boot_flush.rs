//! What a boot loader reads, put where it reads it. GRUB reads /boot without replaying the file system's
//! journal: after a power cut, what fix wrote there (the command-line step's files and update-grub's output,
//! its trial entry, grub-reboot's grubenv, their undoing) may be in the journal only, and the next boot would
//! come up on the configuration from before. After such writes /boot's file system is synced and frozen once
//! (`sys::freeze`: freezing checkpoints the journal), never from a tree (`--root`): a tree's host file systems
//! are never frozen.

use crate::host::Host;
use crate::remedy::StepId;
use crate::sys::freeze::{Cycle, sync_freeze_thaw};

/// The directory whose file system holds what the boot loader reads.
pub(crate) const BOOT: &str = "/boot";

/// Syncs and freezes /boot's file system once; what was done (or why not), in one line for the log.
pub(crate) fn flush(host: &Host) -> String {
    let Some(k) = host.kernel() else {
        return "boot files not flushed: a tree (--root), whose host's file systems are never frozen".into();
    };
    match sync_freeze_thaw(k, &host.path(BOOT)) {
        Ok(Cycle::Done) => {
            "boot files flushed: /boot synced, its file system frozen and thawed (its journal in place for the \
             boot loader)"
                .into()
        }
        Ok(Cycle::SyncedOnly(errno)) => format!(
            "boot files synced; /boot's file system was not frozen ({}): what its journal holds is written \
             back by the kernel later",
            std::io::Error::from_raw_os_error(errno)
        ),
        Err(e) => format!("boot files not flushed: {BOOT}: {e}"),
    }
}

/// Whether a run of these steps writes what the boot loader reads (the command-line step and its trial entry).
pub(crate) fn writes_boot<'a>(steps: impl IntoIterator<Item = &'a StepId>) -> bool {
    steps.into_iter().any(|s| *s == StepId::Cmdline)
}
