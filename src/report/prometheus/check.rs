//! rmp_eval_info.prom (the machine and the tool) and rmp_eval_check.prom (one gauge per check).

use super::Text;
use crate::checks::{Finding, Status, machine as sys};
use crate::host::Host;

/// The preempt model as `uname -v` or /sys/kernel/realtime tell it: rt, dynamic, full, or none.
fn preempt_model(host: &Host) -> &'static str {
    if host
        .read_trimmed(crate::checks::system::REALTIME)
        .ok()
        .as_deref()
        == Some("1")
    {
        return "rt";
    }
    match sys::kernel_version(host) {
        Ok(v) if v.contains("PREEMPT_RT") || v.contains("PREEMPT RT") => "rt",
        Ok(v) if v.contains("PREEMPT_DYNAMIC") => "dynamic",
        Ok(v) if v.split_whitespace().any(|w| w == "PREEMPT") => "full",
        Ok(_) => "none",
        Err(_) => "unknown",
    }
}

/// rmp_eval_info: the identity of the machine and the tool.
pub(crate) fn info(host: &Host) -> String {
    let mut t = Text::default();
    t.family(
        "rmp_eval_info",
        "gauge",
        "rmp-eval version, kernel release, preempt model and architecture (always 1).",
    );
    let kernel = sys::kernel_release(host).unwrap_or_default();
    let arch = sys::machine(host).unwrap_or_default();
    t.sample(
        "rmp_eval_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("kernel", &kernel),
            ("preempt", preempt_model(host)),
            ("arch", &arch),
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
            &[("check", f.id), ("section", &section)],
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
