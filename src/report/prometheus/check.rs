//! rmp_eval_info.prom (the machine and the tool) and rmp_eval_check.prom (one gauge per check).

use super::Text;
use crate::checks::machine_id::KernelInfo;
use crate::checks::{Finding, Status};

/// rmp_eval_info: the identity of the machine and the tool.
pub(crate) fn info(k: &KernelInfo) -> String {
    let mut t = Text::default();
    t.family(
        "rmp_eval_info",
        "gauge",
        "rmp-eval version, kernel release, preempt model, architecture, machine and BIOS (SMBIOS; empty when unknown) (always 1).",
    );
    t.sample(
        "rmp_eval_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("kernel", &k.release),
            ("preempt", k.preempt),
            ("arch", &k.arch),
            ("machine", &k.machine),
            ("bios", &k.bios),
        ],
        1.0,
    );
    t.into_string()
}

/// rmp_eval_check.prom: one 0/1 gauge per check, the count per status, the time.
pub(crate) fn checks(findings: &[Finding], now: u64) -> String {
    let mut t = Text::default();
    t.family(
        "rmp_eval_check_passed",
        "gauge",
        "1 when the check passed (or is informational), 0 when it failed or could not tell.",
    );
    for f in findings {
        let ok = matches!(f.status, Status::Pass | Status::Info);
        let section = serde_json::to_value(f.section)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        t.sample(
            "rmp_eval_check_passed",
            &[("check", f.id.as_str()), ("section", &section)],
            f64::from(u8::from(ok)),
        );
    }
    t.family(
        "rmp_eval_checks",
        "gauge",
        "Checks per status in the last check.",
    );
    for (status, name) in [
        (Status::Pass, "pass"),
        (Status::Fail, "fail"),
        (Status::Warn, "warn"),
        (Status::Pending, "pending"),
        (Status::Unknown, "unknown"),
        (Status::Info, "info"),
        (Status::Warn, "warn"),
        (Status::Pending, "pending"),
    ] {
        let n = findings.iter().filter(|f| f.status == status).count();
        t.sample("rmp_eval_checks", &[("status", name)], n as f64);
    }
    t.family(
        "rmp_eval_check_last_timestamp_seconds",
        "gauge",
        "Unix time of the last check.",
    );
    t.sample("rmp_eval_check_last_timestamp_seconds", &[], now as f64);
    t.into_string()
}
