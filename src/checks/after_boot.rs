//! Is the "after" that fix armed for the next boot still to be measured (the state file: after_boot_state.rs)?

use super::{Assessment, Check, CheckId, Ctx, Eval, Section, Status};
use crate::after_boot_state;
use crate::host::Host;

pub(crate) const AFTER_BOOT: Check = Check {
    id: CheckId::AfterBoot,
    section: Section::System,
    title: "After-boot measurement",
    doc: "When fix applied a change that waits for the next boot (the kernel command line) and measured \"before\", \
          rmp-eval-after-boot.service measures the \"after\" by itself at the next boot, once the system has \
          settled, and `rmp-eval compare` shows the pair. Pending while that measurement has not run yet; Passes \
          as info otherwise (done, or nothing armed). Never a failure.",
    remedy: None,
    by_hand: None,
    evaluate: after_boot_state,
};

fn after_boot_state(host: &Host, _: &Ctx) -> Eval {
    if let Some(a) = after_boot_state::pending(host) {
        return Ok(Assessment::new(
            Status::Pending,
            format!(
                "armed by fix at {}: measures {} s on CPU{} at the next boot",
                a.armed, a.seconds, a.core
            ),
        ));
    }
    Ok(Assessment::info(if after_boot_state::measured(host) {
        "measured after the reboot: `rmp-eval compare` shows before and after"
    } else {
        "none armed"
    }))
}
