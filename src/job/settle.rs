//! A measurement right after a boot may measure the boot's own work still running (services starting, timers
//! that fire soon after boot, first trims): its noise would be credited to the step measured then. So every
//! measurement that may follow a boot — qualify's, the after-boot one — waits until the machine has been up the
//! settle time of /etc/default/rmp-eval. One home for that setting.

use std::io::Write;

use crate::error::{Error, Result};
use crate::host::Host;
use crate::machine::RMP_EVAL_DEFAULTS as DEFAULTS;
use crate::outln;
use crate::parse::defaults;

pub(crate) const SETTLE: &str = "RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS";
const DEFAULT_S: f64 = 60.0;
const MAX_S: f64 = 3600.0;

/// The settle time, seconds: the setting, else 60. A value that is not a number of seconds up to an hour is a
/// usage error, never a guess.
pub(crate) fn seconds(host: &Host) -> Result<f64> {
    let Some(v) = host
        .read(DEFAULTS)
        .ok()
        .and_then(|t| defaults::get(&t, SETTLE))
    else {
        return Ok(DEFAULT_S);
    };
    v.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (0.0..=MAX_S).contains(s))
        .ok_or_else(|| Error::usage(format!("{DEFAULTS}: {SETTLE}={v}: not a number of seconds")))
}

/// How much longer to wait: the settle time less the uptime; nothing once the machine has been up that long, or
/// when its uptime cannot be read (a tree without /proc/uptime).
fn remaining(settle: f64, uptime: Option<f64>) -> f64 {
    uptime.map_or(0.0, |up| (settle - up).max(0.0))
}

/// Waits until the machine has been up the settle time, saying so when it waits.
pub(crate) fn wait(host: &Host, w: &mut dyn Write, who: &str) -> Result<()> {
    let settle = seconds(host)?;
    let up = crate::machine::uptime(host);
    let rest = remaining(settle, up);
    if rest > 0.0 {
        outln!(
            w,
            "{who}: up {:.0} s: letting the boot settle until {settle:.0} s after it ({SETTLE}), then measuring",
            up.unwrap_or(0.0)
        );
        std::thread::sleep(std::time::Duration::from_secs_f64(rest));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_machine_up_less_than_the_settle_time_waits_and_only_the_rest() {
        assert_eq!(remaining(60.0, Some(25.0)), 35.0);
        assert_eq!(remaining(60.0, Some(60.0)), 0.0);
        assert_eq!(remaining(60.0, Some(10_496.27)), 0.0);
        assert_eq!(remaining(0.0, Some(3.0)), 0.0);
        assert_eq!(remaining(60.0, None), 0.0);
    }

    fn tree(defaults: Option<&str>) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        if let Some(t) = defaults {
            std::fs::create_dir_all(d.path().join("etc/default")).unwrap();
            std::fs::write(d.path().join("etc/default/rmp-eval"), t).unwrap();
        }
        let h = Host::with_root(d.path());
        (d, h)
    }

    #[test]
    fn the_setting_is_read_defaulted_and_garbage_refused() {
        assert_eq!(seconds(&tree(None).1).unwrap(), 60.0);
        let set = format!("# comment\n{SETTLE}=90\n");
        assert_eq!(seconds(&tree(Some(&set)).1).unwrap(), 90.0);
        for bad in ["soon", "-1", "3601", "NaN"] {
            let e = seconds(&tree(Some(&format!("{SETTLE}={bad}\n"))).1).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
