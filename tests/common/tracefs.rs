//! tracefs at /sys/kernel/tracing for a test that reads it itself. A run mounts tracefs when it is not and
//! unmounts it again when done, so on a machine without it mounted nothing of the run's trace is there to look at
//! after the run, and a test's own instance has nowhere to go: such a test mounts it for its length.

use std::process::Command;

pub const TRACING: &str = "/sys/kernel/tracing";

/// tracefs mounted for the test when it was not; unmounted again on drop.
pub struct Mounted {
    here: bool,
}

/// Mounts tracefs at TRACING unless it is; a mount that fails panics (the test needs it).
pub fn mounted() -> Mounted {
    let already = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(TRACING));
    if !already {
        let ok = Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACING])
            .status()
            .unwrap();
        assert!(ok.success(), "mount -t tracefs nodev {TRACING}");
    }
    Mounted { here: !already }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.here {
            let _ = Command::new("umount").arg(TRACING).status();
        }
    }
}
